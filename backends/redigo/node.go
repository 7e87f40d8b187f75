package redigo

import (
	"context"
	"errors"
	"time"

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
	// grace is how long after its caller's deadline a request's connection
	// waits for the reply (see late): the read timeout of a pool the node
	// made, [driver.DefaultReadTimeout] for a caller's.
	grace time.Duration
	// open has the connections of a pool the node made; nil for a
	// caller's.
	open *openConns
	// lateReqs counts the requests given up on that still hold a
	// connection (see do).
	lateReqs adapterkit.Late
	// gate keeps calls from starting after Close, which waits for the
	// goroutines of calls that were given up on.
	gate adapterkit.Gate
	// closing ends at Close: it bounds the dials of requests given up on
	// (see dialOnOwn), with the pool's dial timeout.
	closing     context.Context
	closeDialer context.CancelFunc
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
// (after a restart, say), which fail their next call. A request the node
// gave up on keeps its connection until its reply, or 3s
// ([driver.DefaultReadTimeout]) past its context's deadline, and does not
// cost a new connection (see the package documentation, Connections).
func NewNode(p *redis.Pool, addr string) driver.Node {
	return newNode(p, addr, false)
}

func newNode(p *redis.Pool, addr string, owned bool) *node {
	closing, closeDialer := context.WithCancel(context.Background())
	return &node{pool: p, addr: addr, owned: owned, grace: driver.DefaultReadTimeout, closing: closing, closeDialer: closeDialer}
}

// dialOnOwn returns ctx, for waiting for a free connection of the pool, with
// the context a connection the wait ends in dialing is made within: closing,
// not ctx. A dial that the caller's deadline cut short after the server
// accepted it is a connection the server counted and the node threw away,
// and on a busy machine nearly every request of a slow node would cost one;
// made to its end, the connection serves the next request. The pool's dial
// function (connOptions.dial) reads it; a caller's pool ignores it.
func dialOnOwn(ctx, closing context.Context) context.Context {
	return context.WithValue(ctx, dialContextKey{}, closing)
}

type dialContextKey struct{}

// Addr returns the node's host:port.
func (n *node) Addr() string { return n.addr }

// Eval runs s by EVALSHA and, when the server does not have it cached, by
// EVAL, on one connection, and normalizes the reply as package driver
// documents.
func (n *node) Eval(ctx context.Context, s *driver.Script, keys []string, args []string) (any, error) {
	return n.do(ctx, func(c redis.Conn, ctx, late context.Context) (any, error) {
		cmd := evalargs.Command(nil, s, keys, args) // EVAL's too, with the source for the hash
		v, err := redis.DoContext(c, late, "EVALSHA", cmd...)
		if driver.IsNoScript(err) && ctx.Err() == nil {
			cmd[0] = s.Source
			v, err = redis.DoContext(c, late, "EVAL", cmd...)
		}
		return v, err
	})
}

// SetNXGet sends SET key value NX GET PX ms, as [driver.Setter] documents.
func (n *node) SetNXGet(ctx context.Context, key, val, ms string) (any, error) {
	return n.do(ctx, func(c redis.Conn, _, late context.Context) (any, error) {
		return redis.DoContext(c, late, "SET", key, val, "NX", "GET", "PX", ms)
	})
}

// Ping sends PING.
func (n *node) Ping(ctx context.Context) error {
	_, err := n.do(ctx, func(c redis.Conn, _, late context.Context) (any, error) {
		return redis.DoContext(c, late, "PING")
	})
	return err
}

// command sends args to the server, for [driver.CheckOpen].
func (n *node) command(ctx context.Context, args ...string) error {
	_, err := n.do(ctx, func(c redis.Conn, _, late context.Context) (any, error) {
		return redis.DoContext(c, late, args[0], adapterkit.Args(args[1:])...)
	})
	return err
}

// do borrows a connection from the pool within ctx, runs req on it and
// gives it back, and returns req's normalized reply, or ctx's error as soon
// as ctx is done. req sends its commands within late (see node.late), and
// sends none once ctx is done.
//
// The request runs on a goroutine of its own ([adapterkit.Gate.Go]), which
// the caller stops waiting for when ctx ends, but which waits on for the
// reply before it gives the connection back: redigo drops a connection
// whose read failed, and a node whose replies come after its callers'
// deadlines would otherwise dial, and authenticate, for nearly every
// request. The pool's MaxActive, with Wait, then bounds the connections a
// node opens however slow its server; and while a request is late, one that
// finds no idle connection waits for the late one to come back
// ([adapterkit.Late]) rather than dialing another to the same slow server.
//
// That goroutine costs about a fifth of an uncontended lock's rate: the
// requests of package dlm ([driver.WithNodeDeadline]) run on the caller's
// goroutine instead (inline) while no request of the node has run past its
// deadline for [adapterkit.SlowWindow].
func (n *node) do(ctx context.Context, req func(c redis.Conn, ctx, late context.Context) (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if driver.DeadlineOnly(ctx) && !n.lateReqs.Slow() {
		return n.inline(ctx, req)
	}
	return n.async(ctx, req, nil)
}

// async is do on a goroutine of its own, on c, a connection borrowed from
// the pool already, or one it borrows when c is nil.
func (n *node) async(ctx context.Context, req func(c redis.Conn, ctx, late context.Context) (any, error), c redis.Conn) (any, error) {
	v, err := n.gate.Go(ctx, errClosed, func(ctx context.Context) (_ any, err error) {
		defer n.panics().RecoverTo(&err)
		// Counted from here, so that should its caller give up on it
		// before it has a connection, the next request finds it late;
		// ended after the connection is back.
		defer n.lateReqs.Begin(ctx)()
		if c == nil {
			if err := n.lateReqs.Wait(ctx, n.noIdle); err != nil {
				return nil, err
			}
			if err := ctx.Err(); err != nil {
				return nil, err // its caller gave up: take no connection
			}
			if c, err = n.pool.GetContext(dialOnOwn(ctx, n.closing)); err != nil {
				return nil, err
			}
		}
		defer c.Close()
		v, err := req(c, ctx, n.late(ctx))
		if err != nil {
			return nil, err
		}
		return adapterkit.Value(Name, v)
	})
	if err == errClosed && c != nil { // not run: the node is closed
		c.Close()
	}
	if err != nil {
		return nil, n.fail(ctx, err)
	}
	return v, nil
}

// inline is do on the caller's goroutine, for a ctx of
// [driver.WithNodeDeadline] while the node is not slow ([adapterkit.Late]):
// the read deadline, ctx's, bounds the request, and a connection whose
// request timed out is dropped, and makes the node slow. A request that
// finds the node slow once it has its connection (another timed out while
// it waited for the pool) goes on as async.
func (n *node) inline(ctx context.Context, req func(c redis.Conn, ctx, late context.Context) (any, error)) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	// Inside the gate, so that Close closes the pool only once no inline
	// request waits for one of its connections.
	if !n.gate.Enter() {
		return nil, errClosed
	}
	inside := true
	leave := func() {
		if inside {
			inside = false
			n.gate.Leave()
		}
	}
	defer leave()
	c, err := n.pool.GetContext(ctx)
	if err == nil && n.lateReqs.Slow() {
		leave() // async enters the gate itself
		return n.async(ctx, req, c)
	}
	if err == nil {
		defer c.Close()
		var v any
		if v, err = req(c, ctx, ctx); err == nil {
			return adapterkit.Value(Name, v)
		}
	}
	if !isReply(err) && deadlinePassed(ctx) {
		n.lateReqs.TimedOut()
	}
	return nil, n.fail(ctx, err)
}

// deadlinePassed reports whether ctx ended or its deadline has passed.
func deadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(d)
}

// late returns the context a request within ctx reads its reply within:
// one that is never cancelled, with a deadline later than ctx's by n.grace.
// A connection whose request ctx gave up on thus reads the late reply and
// goes back to the pool, rather than being dropped.
func (n *node) late(ctx context.Context) context.Context {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithoutCancel(ctx)
	}
	return lateContext{context.WithoutCancel(ctx), d.Add(n.grace)}
}

// noIdle reports whether the pool has no idle connection.
func (n *node) noIdle() bool { return n.pool.IdleCount() == 0 }

// lateContext is a context that is never cancelled, with a deadline.
type lateContext struct {
	context.Context
	deadline time.Time
}

func (c lateContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Close closes the connections that requests given up on still hold,
// waits for their goroutines, and then closes the pool if the node made
// it: no request waits for one of the pool's connections as it closes
// (redigo's Pool.Close closes the channel such a request waits on). Calls
// after Close fail. A pool of the caller's stays open, and Close does not
// wait for the goroutines: they end at the connections' read timeouts, or
// n's grace after their deadlines.
func (n *node) Close() error {
	if !n.gate.Close() {
		return nil
	}
	n.closeDialer()
	if !n.owned {
		return nil
	}
	n.open.closeAll()
	n.gate.Wait()
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
