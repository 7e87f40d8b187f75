package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"reflect"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// Name is the driver name under which this package registers itself, as it
// appears in "redis+goredis://" and "rediss+goredis://" URLs.
const Name = "goredis"

func init() { dlm.Register(Name, Driver{}) }

// Driver opens nodes backed by a go-redis client. Its zero value is ready to
// use; package dlm uses the one registered under [Name].
type Driver struct{}

var _ driver.Driver = Driver{}

// Open parses url with [driver.ParseURL] and returns a node with a client of
// its own, which the node's Close closes: a [redis.Client], or for a URL
// with cluster=true a [redis.ClusterClient] over the seed addresses, or for
// a URL with sentinel_master=NAME a failover client that finds the master
// through the Sentinels (the node is then that one master, whichever
// server it is at the moment).
//
// Open connects at once and checks the server with [driver.CheckOpen],
// within the URL's dial timeout, as every backend does. A server that
// answers with an error reply (a wrong password, a user without the rights
// to connect, a database that does not exist, a password for a server that
// has none) fails Open. A server that cannot be reached, or answers that it
// is not ready ([driver.Transient]: LOADING, BUSY, MASTERDOWN, TRYAGAIN,
// CLUSTERDOWN), does not: go-redis connects on use, so a manager can be
// opened while a minority of its nodes is down, and until the server is
// back Eval and Ping return the connection error. Errors never contain the
// password.
func (Driver) Open(url string) (driver.Node, error) {
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	n := newNode(newClient(cfg), cfg.Name(), true)
	n.password = cfg.Password
	if err := adapterkit.CheckOpen(cfg, Name, cfg.Name(), n.command, errorReply, n.Close); err != nil {
		return nil, err
	}
	return n, nil
}

// command sends args to the server, for [driver.CheckOpen].
func (n *node) command(ctx context.Context, args ...string) error {
	cmd := adapterkit.Args(args)
	_, err := n.wait(ctx, n.safe(func(ctx context.Context) (any, error) {
		return nil, n.client.Do(ctx, cmd...).Err()
	}))
	return err
}

// errorReply returns the text of err when it is an error reply of the
// server.
func errorReply(err error) (string, bool) { return adapterkit.ErrorReply[redis.Error](err) }

// clientOptions translates a node URL into go-redis options.
//
//   - ContextTimeoutEnabled: the context's deadline bounds each request,
//     not only ReadTimeout and WriteTimeout.
//   - MaxRetries -1: go-redis would otherwise resend a failed request up to
//     three times, spending the lock's validity on one node; package dlm
//     retries whole attempts instead.
//   - DialerRetries 1, in go-redis releases that have the option: by
//     default the pool dials five times, 100 ms apart; a refused connection
//     is reported as refused, at once, and not as the context's deadline.
//   - Dialer: go-redis v9.0's own dialer does the TLS handshake without the
//     context; this one bounds it by the context and the dial timeout, and
//     its connections read through the URL's reply limit
//     ([adapterkit.LimitReplies]): go-redis allocates what a reply's header
//     announces.
//
// pool_size 0 keeps go-redis' default of 10 connections per GOMAXPROCS.
func clientOptions(cfg *driver.Config) *redis.Options {
	o := &redis.Options{
		Addr:                  cfg.Addr,
		Username:              cfg.Username,
		Password:              cfg.Password,
		DB:                    cfg.DB,
		TLSConfig:             cfg.TLS,
		Dialer:                dialer(cfg.DialTimeout, cfg.TLS, adapterkit.ReplyLimit(cfg)),
		DialTimeout:           cfg.DialTimeout,
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          cfg.WriteTimeout,
		PoolSize:              cfg.PoolSize,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
	}
	dialOnce(o)
	return o
}

// dialOnce sets the DialerRetries field of a go-redis options struct to 1
// (one dial, no retry) where the field exists: the backend requires go-redis
// v9.0.0, whose options lack it, while a program may build it with a later
// release, whose default is 5.
func dialOnce(opts any) {
	f := reflect.ValueOf(opts).Elem().FieldByName("DialerRetries")
	if f.IsValid() && f.CanSet() && f.Kind() == reflect.Int {
		f.SetInt(1)
	}
}

// dialer connects over TCP, and TLS when tlsConfig is set, within timeout
// and the context, and guards each connection by replyLimit
// ([adapterkit.LimitReplies]; 0: none).
func dialer(timeout time.Duration, tlsConfig *tls.Config, replyLimit int64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
	if tlsConfig == nil {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return adapterkit.LimitReplies(c, replyLimit), nil
		}
	}
	td := &tls.Dialer{NetDialer: nd, Config: tlsConfig}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := td.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return adapterkit.LimitReplies(tlsConn{c.(*tls.Conn)}, replyLimit), nil
	}
}

// tlsConn shows go-redis the TCP connection under TLS. Before reusing an
// idle connection go-redis peeks at its socket, to drop one the server has
// closed (after a restart, say), but only through [syscall.Conn], which a
// [tls.Conn] is not: without this, every pooled TLS connection would fail
// its first request after a restart. An idle connection has been sent
// nothing, TLS records included, so the peek sees what it would in the
// clear.
type tlsConn struct{ *tls.Conn }

func (c tlsConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.NetConn().(syscall.Conn)
	if !ok {
		return nil, errors.New("goredis: TLS over a connection without a socket")
	}
	return sc.SyscallConn()
}
