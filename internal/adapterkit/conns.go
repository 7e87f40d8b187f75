package adapterkit

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// rueidis' Client.Close sends QUIT on each connection and waits for the
// answer, and stops the PING that would otherwise give up on a silent
// server: closing a client whose server is paused or cut off waits until the
// server answers, which may be never. A node that made its client therefore
// dials through conns, and when Close has not finished after the write
// timeout, it closes the sockets under the client, which then finishes at
// once.

// conns dials connections as rueidis does and keeps the open ones.
type conns struct {
	// replyLimit guards each connection ([LimitReplies]; 0: none):
	// rueidis and valkey-go allocate what a reply's header announces.
	replyLimit int64
	// life ends at the node's Close; a call's shielded dial (dialshield.go)
	// connects within it.
	life context.Context
	// unsure is called when a connection closes and when the client
	// dials one: the node's next calls may dial, and take the guarded
	// path (guard.go) until the server answers.
	unsure func()

	mu     sync.Mutex
	open   map[*conn]struct{}
	closed bool
}

// dial is a [ClientOptions.DialFn]. The dial of a guarded call, whose
// context holds a [dialShield], connects within the node's life and d's
// timeout, not within the call's context (see dialShield). A call on its
// caller's goroutine (guard.go) does not dial: it fails with
// errDialOnCaller and goes on as guarded, and the next calls are guarded
// until the server answers. Any other dial (the client's own, within a
// context that does not end, or one marked by dialHere) connects within ctx
// and d's timeout.
func (cs *conns) dial(ctx context.Context, dst string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
	s, shielded := ctx.Value(dialShieldKey{}).(*dialShield)
	switch {
	case shielded:
		if !s.dialStarted() {
			return nil, context.Canceled // its caller gave up: no connection
		}
		ctx = s.life
	case ctx.Done() != nil && ctx.Value(dialHereKey{}) == nil:
		cs.unsure()
		return nil, errDialOnCaller
	default:
		cs.unsure()
	}
	var nc net.Conn
	var err error
	if cfg != nil {
		nc, err = (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", dst)
	} else {
		nc, err = d.DialContext(ctx, "tcp", dst)
	}
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: LimitReplies(nc, cs.replyLimit), cs: cs}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		nc.Close()
		return nil, net.ErrClosed
	}
	if cs.open == nil {
		cs.open = make(map[*conn]struct{})
	}
	cs.open[c] = struct{}{}
	return c, nil
}

// errDialOnCaller is the error of a call whose connection has to be dialed
// on its caller's goroutine: the call goes on as guarded.
var errDialOnCaller = errors.New("the connection is dialed on a goroutine of its own")

// dialHereKey marks the context of a call that may dial within it: see
// dialHere.
type dialHereKey struct{}

// dialHere returns ctx for a call of the node's own on its caller's
// goroutine, which may dial within ctx, as before a dial was shielded
// (Open's check of the server, a subscription's CLUSTER SLOTS).
func dialHere(ctx context.Context) context.Context {
	return context.WithValue(ctx, dialHereKey{}, true)
}

// closeAll closes the open connections and fails later dials.
func (cs *conns) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	open := cs.open
	cs.open = nil
	cs.mu.Unlock()
	for c := range open {
		c.Conn.Close()
	}
}

// conn is a connection that leaves its conns when closed.
type conn struct {
	net.Conn
	cs *conns
}

func (c *conn) Close() error {
	c.cs.mu.Lock()
	delete(c.cs.open, c)
	c.cs.mu.Unlock()
	c.cs.unsure()
	return c.Conn.Close()
}

// closeClient closes c, a client the node made, waiting at most closeGrace
// for the server to answer before closing its connections. It returns a
// [driver.PanicError] when c's Close panicked.
func (n *Pipelined[C, D]) closeClient(c C) error {
	done := make(chan error, 1)
	go func() { done <- n.panics().Do(func() { n.lib.Close(c) }) }()
	t := time.NewTimer(n.closeGrace)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		n.conns.closeAll()
		err = <-done
	}
	// A cluster client's Close closes its connections on goroutines of
	// their own and returns at once, and a connection the client is making
	// as it closes may be left open, with a goroutine pinging it: close
	// what is still open.
	n.conns.closeAll()
	return err
}
