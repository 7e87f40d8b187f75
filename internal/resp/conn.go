// Package resp is a minimal RESP2 client for Redis and a
// [driver.Node] over it.
//
// It exists so that the core's own tests and the dlmtest harness reach a
// real redis-server without importing a client library, and to show how
// little a custom node adapter needs: one connection type and a small pool.
package resp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Conn is one connection to Redis. It is not safe for concurrent use. After
// an I/O error, a protocol error or a cancelled request it is broken: the
// stream may be out of step with the server, so every later Do fails and the
// connection should be closed.
type Conn struct {
	addr         string
	raw          net.Conn // the TCP connection, for deadlines and Close
	br           *bufio.Reader
	bw           *bufio.Writer
	readTimeout  time.Duration
	writeTimeout time.Duration
	broken       error
}

// Dial connects to cfg.Addr, over TLS when cfg.TLS is set, and sends AUTH
// when cfg has a password and SELECT when cfg.DB is not 0. cfg.DialTimeout,
// when positive, bounds all of it; so does ctx.
func Dial(ctx context.Context, cfg *driver.Config) (*Conn, error) {
	if cfg.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
	}
	raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, dialError(ctx, cfg.Addr, err)
	}
	c := &Conn{addr: cfg.Addr, raw: raw, readTimeout: cfg.ReadTimeout, writeTimeout: cfg.WriteTimeout}
	var rw net.Conn = raw
	if cfg.TLS != nil {
		tc := tls.Client(raw, tlsConfig(cfg))
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, dialError(ctx, cfg.Addr, err)
		}
		rw = tc
	}
	c.br, c.bw = bufio.NewReader(rw), bufio.NewWriter(rw)
	if err := c.hello(ctx, cfg); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// tlsConfig returns cfg.TLS with a server name, which crypto/tls needs to
// verify the certificate.
func tlsConfig(cfg *driver.Config) *tls.Config {
	if cfg.TLS.ServerName != "" {
		return cfg.TLS
	}
	tc := cfg.TLS.Clone()
	tc.ServerName, _, _ = net.SplitHostPort(cfg.Addr)
	return tc
}

// hello authenticates and selects the database.
func (c *Conn) hello(ctx context.Context, cfg *driver.Config) error {
	var cmds [][]string
	switch {
	case cfg.Username != "":
		cmds = append(cmds, []string{"AUTH", cfg.Username, cfg.Password})
	case cfg.Password != "":
		cmds = append(cmds, []string{"AUTH", cfg.Password})
	}
	if cfg.DB != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(cfg.DB)})
	}
	for _, cmd := range cmds {
		if _, err := c.Do(ctx, cmd...); err != nil {
			return fmt.Errorf("resp: %s on %s: %w", cmd[0], c.addr, err)
		}
	}
	return nil
}

func dialError(ctx context.Context, addr string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("resp: dial %s: %w", addr, ctx.Err())
	}
	return fmt.Errorf("resp: dial %s: %w", addr, err)
}

// Do sends one command and returns its reply: nil, int64, string or []any
// (whose elements may also be [Error] values), as the [driver] package
// documentation describes. An error reply is returned as an [Error]; it
// leaves the connection usable.
//
// Do returns when ctx is done, with an error that wraps ctx.Err(), and
// breaks the connection if the command was under way.
func (c *Conn) Do(ctx context.Context, args ...string) (any, error) {
	if c.broken != nil {
		return nil, fmt.Errorf("resp: %s: connection broken by an earlier failure: %w", c.addr, c.broken)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("resp: %s: %w", c.addr, err)
	}
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.raw.Close()
		close(interrupted)
	})
	v, err := c.roundTrip(ctx, args)
	if !stop() {
		<-interrupted
		if err == nil {
			// The reply made it, but the connection is closed now.
			c.broken = ctx.Err()
		}
	}
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	if e, ok := v.(Error); ok {
		return nil, e
	}
	return v, nil
}

func (c *Conn) roundTrip(ctx context.Context, args []string) (any, error) {
	if err := c.raw.SetWriteDeadline(c.deadline(ctx, c.writeTimeout)); err != nil {
		return nil, err
	}
	if err := writeCommand(c.bw, args); err != nil {
		return nil, err
	}
	if err := c.raw.SetReadDeadline(c.deadline(ctx, c.readTimeout)); err != nil {
		return nil, err
	}
	v, err := readReply(c.br)
	if err == nil && c.br.Buffered() > 0 {
		// One command, one reply: more is a stream out of step.
		return nil, fmt.Errorf("%w: %d bytes after the reply", errProtocol, c.br.Buffered())
	}
	return v, err
}

// deadline is the earlier of ctx's deadline and timeout from now; the zero
// time, meaning none, when neither is set.
func (c *Conn) deadline(ctx context.Context, timeout time.Duration) time.Time {
	var d time.Time
	if timeout > 0 {
		d = time.Now().Add(timeout)
	}
	if dl, ok := ctx.Deadline(); ok && (d.IsZero() || dl.Before(d)) {
		d = dl
	}
	return d
}

// fail breaks the connection and says why, in terms of ctx when ctx is why.
func (c *Conn) fail(ctx context.Context, err error) error {
	c.broken = err
	c.raw.Close()
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
		// The socket deadline was ctx's and fired first; ctx's own timer
		// is due now.
		<-ctx.Done()
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("resp: %s: %w", c.addr, ctxErr)
	}
	return fmt.Errorf("resp: %s: %w", c.addr, err)
}

// Close closes the connection.
func (c *Conn) Close() error {
	err := c.raw.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
