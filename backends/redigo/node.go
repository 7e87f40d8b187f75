package redigo

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
	"github.com/dlmgo/redlock/internal/evalargs"
)

var (
	_ driver.Node   = (*node)(nil)
	_ driver.Pinger = (*node)(nil)
)

// errClosed is returned by a node's calls after its Close.
var errClosed = errors.New("redigo: node closed")

// node is one Redis master reached through a redigo pool. Each call borrows
// a connection for its request and gives it back.
type node struct {
	pool *redis.Pool
	addr string
	// owned says that the node made the pool and Close closes it.
	owned bool
	// password is redacted from errors; set for pools made from a URL.
	password string
	closed   atomic.Bool
}

// NewNode returns a node that runs scripts through connections from p, a
// pool the caller built and keeps: the node's Close does not close p. addr
// names the node in errors and logs; give host:port, never a password.
//
// p's connections must come from redigo's Dial, DialContext or NewConn (or
// otherwise implement [redis.ConnWithContext]), so that a call returns when
// its context is done. Give p a DialContext, so that connecting honours the
// context too; Wait with MaxActive, so that a call waits for a free
// connection rather than opening one beyond the bound; and a TestOnBorrow,
// since redigo otherwise hands out pooled connections the server has closed
// (after a restart, say), which fail their next call.
func NewNode(p *redis.Pool, addr string) driver.Node {
	return newNode(p, addr, false)
}

func newNode(p *redis.Pool, addr string, owned bool) *node {
	return &node{pool: p, addr: addr, owned: owned}
}

// Addr returns the node's host:port.
func (n *node) Addr() string { return n.addr }

// Eval runs s by EVALSHA and, when the server does not have it cached, by
// EVAL, on one connection, and normalizes the reply as package driver
// documents.
func (n *node) Eval(ctx context.Context, s *driver.Script, keys []string, args []string) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	c, err := n.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	cmd := evalargs.Command(nil, s, keys, args) // EVAL's too, with the source for the hash
	v, err := redis.DoContext(c, ctx, "EVALSHA", cmd...)
	if driver.IsNoScript(err) {
		cmd[0] = s.Source
		v, err = redis.DoContext(c, ctx, "EVAL", cmd...)
	}
	if err != nil {
		return nil, n.fail(ctx, err)
	}
	return adapterkit.Value(Name, v)
}

// SetNXGet sends SET key value NX GET PX ms, as [driver.Setter] documents.
func (n *node) SetNXGet(ctx context.Context, key, val, ms string) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	c, err := n.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	v, err := redis.DoContext(c, ctx, "SET", key, val, "NX", "GET", "PX", ms)
	if err != nil {
		return nil, n.fail(ctx, err)
	}
	return adapterkit.Value(Name, v)
}

// Ping sends PING.
func (n *node) Ping(ctx context.Context) (err error) {
	defer n.panics().RecoverTo(&err)
	c, err := n.conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = redis.DoContext(c, ctx, "PING")
	return n.fail(ctx, err)
}

// conn borrows a connection from the pool within ctx. A connection whose
// request failed is closed rather than given back: redigo marks it broken.
func (n *node) conn(ctx context.Context) (redis.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n.closed.Load() {
		return nil, errClosed
	}
	c, err := n.pool.GetContext(ctx)
	if err != nil {
		return nil, n.fail(ctx, err)
	}
	return c, nil
}

// Close closes the pool if the node made it. Calls after Close fail.
func (n *node) Close() error {
	if n.closed.Swap(true) || !n.owned {
		return nil
	}
	return n.closeSafe(n.pool.Close)
}

// fail makes err fit for the caller: a failure to get a reply as ctx ended
// wraps ctx.Err(), and the password never shows. Error replies pass as they
// are, their message starting with the Redis error code.
func (n *node) fail(ctx context.Context, err error) error {
	return adapterkit.Fail(ctx, err, n.password, isReply)
}

// isReply reports whether err is an error reply of the server.
func isReply(err error) bool { return adapterkit.IsReply[redis.Error](err) }
