package goredis

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
	"github.com/dlmgo/redlock/internal/evalargs"
)

var (
	_ driver.Node   = (*node)(nil)
	_ driver.Pinger = (*node)(nil)
)

// errClosed is returned by a node's calls after its Close.
var errClosed = errors.New("goredis: node closed")

// node is one Redis master reached through a go-redis client, shared by
// every call.
type node struct {
	client redis.UniversalClient
	addr   string
	// owned says that the node made the client and Close closes it.
	owned bool
	// password is redacted from errors; set for clients made from a URL.
	password string
	// deadlines says that the client bounds each request by its context's
	// deadline (ContextTimeoutEnabled).
	deadlines bool
	// grace is how long after its caller's deadline a request's connection
	// waits for the reply (see late): the client's read timeout.
	grace time.Duration
	// batch sends package dlm's requests that come at the same time in one
	// pipeline.
	batch batcher
	// slow says whether a request ran past its deadline lately (inline).
	slow adapterkit.Late
	// gate keeps calls from starting after Close, which waits for the
	// goroutines of calls that were given up on.
	gate adapterkit.Gate
}

// NewNode returns a node that runs scripts through c, a client the caller
// built and keeps: the node's Close does not close c. The node's Addr is the
// address of a [redis.Client], the comma-separated seed addresses of a
// [redis.ClusterClient], and [Name] for other clients.
//
// The node honours each call's context whatever c's options. A request the
// node gave up on keeps its connection until the late reply comes, or c's
// ReadTimeout (3s where unset) past the context's deadline, and does not
// cost a new connection (see the package documentation, Contexts). c's
// MaxRetries applies to every call.
//
// Set c's retries off, as [Driver.Open] does for the clients it makes:
// MaxRetries: -1, and DialerRetries: 1 with go-redis releases that have it.
// By default go-redis sends a failed request up to 3 more times and dials up
// to 5 times, 100 ms apart, for each: a node that is down spends the whole
// node timeout on one attempt, its error becomes the context's ("context
// deadline exceeded") instead of the refused connection, and package dlm
// retries whole attempts anyway. go-redis also logs failed dials to
// standard error; [SetLogger] sends its log to a [slog.Logger].
//
// A [redis.Ring] is refused: every call of its node fails with an error
// matching [dlm.ErrInvalid], which a manager reports without retrying. A
// Ring moves keys to other shards when it marks one down, so one node would
// grant a lock that it still holds on the shard it stopped using; make each
// shard a node of its own instead, or use a [redis.ClusterClient].
func NewNode(c redis.UniversalClient) driver.Node {
	if _, ok := c.(*redis.Ring); ok {
		return ringNode{}
	}
	return newNode(c, clientAddr(c), false)
}

func newNode(c redis.UniversalClient, addr string, owned bool) *node {
	grace := readTimeout(c)
	return &node{client: c, addr: addr, owned: owned, deadlines: contextTimeouts(c), grace: grace, batch: batcher{client: c, grace: grace}}
}

// contextTimeouts reports whether c takes its requests' socket deadlines
// from their contexts.
func contextTimeouts(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// readTimeout returns c's read timeout, or [driver.DefaultReadTimeout]
// where c has none or is of another kind: how long a request's connection
// waits for a late reply (see node.late).
func readTimeout(c redis.UniversalClient) time.Duration {
	var d time.Duration
	switch c := c.(type) {
	case *redis.Client:
		d = c.Options().ReadTimeout
	case *redis.ClusterClient:
		d = c.Options().ReadTimeout
	}
	if d <= 0 {
		return driver.DefaultReadTimeout
	}
	return d
}

func clientAddr(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		if addrs := c.Options().Addrs; len(addrs) > 0 {
			return strings.Join(addrs, ",")
		}
	}
	return Name
}

// Addr returns the node's host:port.
func (n *node) Addr() string { return n.addr }

// Eval runs s by EVALSHA and, when the server does not have it cached, by
// EVAL, and normalizes the reply as package driver documents.
func (n *node) Eval(ctx context.Context, s *driver.Script, keys []string, args []string) (any, error) {
	if inline, err := n.inline(ctx); inline || err != nil {
		if err != nil {
			return nil, err
		}
		v, err := n.safe(func(ctx context.Context) (any, error) { return n.eval(ctx, s, keys, args, true) })(ctx)
		return v, n.fail(ctx, err)
	}
	batched := n.batched(ctx)
	return n.wait(ctx, n.safe(func(ctx context.Context) (any, error) { return n.eval(ctx, s, keys, args, batched) }))
}

// eval runs the script; batched sends EVALSHA in a batch with the other
// requests under way (see batcher), for a request that batched allows and
// that has fewer than soloKeys keys.
func (n *node) eval(ctx context.Context, s *driver.Script, keys []string, args []string, batched bool) (any, error) {
	cmd := evalargs.Command([]any{"evalsha"}, s, keys, args)
	v, err := n.send(ctx, cmd, batched && len(keys) < soloKeys)
	if driver.IsNoScript(err) {
		cmd[0], cmd[1] = "eval", s.Source
		v, err = n.client.Do(n.late(ctx), cmd...).Result()
	}
	return normalize(v, err)
}

// SetNXGet sets a free key as [driver.Setter] documents, by SET key value
// NX PX ms and, only when that finds the key held, GET key. go-redis makes
// an error of a nil reply (redis.Nil), which its retry checks then examine
// at a cost of about 15 allocations, and the nil reply of SET … NX GET is
// the common one, a free key; SET … NX answers OK there instead. It also
// works on a Redis before 7.0.
func (n *node) SetNXGet(ctx context.Context, key, val, ms string) (any, error) {
	if inline, err := n.inline(ctx); inline || err != nil {
		if err != nil {
			return nil, err
		}
		v, err := n.safe(func(ctx context.Context) (any, error) { return n.setNX(ctx, key, val, ms, true) })(ctx)
		return v, n.fail(ctx, err)
	}
	batched := n.batched(ctx)
	return n.wait(ctx, n.safe(func(ctx context.Context) (any, error) { return n.setNX(ctx, key, val, ms, batched) }))
}

// setNX is SetNXGet's requests; batched as for eval.
func (n *node) setNX(ctx context.Context, key, val, ms string, batched bool) (any, error) {
	_, err := n.send(ctx, []any{"set", key, val, "nx", "px", ms}, batched)
	if err == nil { // OK: set
		return nil, nil
	}
	if err != redis.Nil {
		return normalize(nil, err)
	}
	v, err := n.send(ctx, []any{"get", key}, batched)
	if err == redis.Nil {
		return "", nil // held when SET ran, expired since: not this value's
	}
	return normalize(v, err)
}

// soloKeys is how many keys make a request that is a batch itself, the
// extensions of many locks (see dlm's WithAutoExtend): it is sent on a
// connection of its own, under its own deadline, rather than in a batch
// with the other requests under way, whose earliest deadline a batch is
// sent under. Its deadline is longer than an acquire's, and it takes longer
// to run: sent with them, it would fail at theirs, and hold them up.
const soloKeys = 4

// send sends cmd; batched sends it in a batch with the other requests under
// way (see batcher), for a request that batched allows.
func (n *node) send(ctx context.Context, cmd []any, batched bool) (any, error) {
	if batched {
		c := redis.NewCmd(ctx, cmd...)
		n.batch.do(ctx, c)
		return c.Result()
	}
	return n.client.Do(n.late(ctx), cmd...).Result()
}

// Ping sends PING.
func (n *node) Ping(ctx context.Context) error {
	_, err := n.wait(ctx, n.safe(func(ctx context.Context) (any, error) {
		return nil, n.client.Ping(n.late(ctx)).Err()
	}))
	return err
}

// batched reports whether a request within ctx may be sent in a batch
// with the other requests under way (see batcher): ctx is one of
// [driver.WithNodeDeadline], the kind package dlm sends, which ends only at
// its deadline while the request runs, and the client takes its socket
// deadlines from the context.
func (n *node) batched(ctx context.Context) bool {
	return n.deadlines && driver.DeadlineOnly(ctx)
}

// inline reports whether a request within ctx runs on the caller's
// goroutine, bounded by the socket deadline, ctx's: ctx is one batched
// allows, and no request of the node ran past its deadline for
// [adapterkit.SlowWindow] ([adapterkit.Late.Slow]). A request that times
// out there costs its connection, and makes the node slow: its requests
// then wait on goroutines of their own (wait), which cost about a fifth of
// an uncontended lock's rate, and keep their connections for the late
// replies (see late). It returns the error of a done ctx or a closed node.
func (n *node) inline(ctx context.Context) (bool, error) {
	if !n.batched(ctx) || n.slow.Slow() {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if n.gate.Closed() {
		return false, errClosed
	}
	return true, nil
}

// asyncCtx marks the context of a request that runs on a goroutine of its
// own (wait), which the caller may stop waiting for.
type asyncCtx struct{ context.Context }

// late returns the context a request within ctx gives the client: for a
// request on a goroutine of its own (asyncCtx), ctx with a deadline later
// by n.grace; for one on the caller's goroutine, ctx. The caller stops waiting at ctx's
// deadline (wait), but the connection waits on for the reply, which goes
// on to the pool with it: go-redis closes a connection whose read timed
// out, and a node whose replies come after its callers' deadlines would
// otherwise dial, and run the handshake, for nearly every request.
// Cancelling ctx still ends a wait for a connection of the pool, or a
// dial: a request whose caller has left is not sent.
func (n *node) late(ctx context.Context) context.Context {
	a, ok := ctx.(asyncCtx)
	if !ok {
		return ctx
	}
	if d, ok := a.Deadline(); ok {
		return lateContext{a.Context, d.Add(n.grace)}
	}
	return a.Context
}

// lateContext is a context whose deadline is later than its parent's.
type lateContext struct {
	context.Context
	deadline time.Time
}

func (c lateContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Close closes the client if the node made it, and then waits for the
// goroutines of calls that were given up on. Calls after Close fail.
func (n *node) Close() error {
	if !n.gate.Close() {
		return nil
	}
	if !n.owned {
		// The goroutines end at the user's client's socket deadlines; the
		// client stays open, and Close does not wait for them.
		return nil
	}
	err := n.closeSafe(n.client.Close)
	n.gate.Wait()
	return err
}

// wait runs call and returns its result, or returns early when ctx is done:
// go-redis bounds a request by the context's deadline but does not notice
// a cancellation before it, so call runs on a goroutine of its own
// ([adapterkit.Gate.Go]).
func (n *node) wait(ctx context.Context, call func(context.Context) (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := n.gate.Go(asyncCtx{ctx}, errClosed, func(ctx context.Context) (any, error) {
		// Counted from here, so that should its caller give up on it
		// before it has a connection, the next request finds it late.
		defer n.slow.Begin(ctx)()
		// While a request is late, one that finds no idle connection
		// waits for the late one rather than dialing another to the same
		// slow server ([adapterkit.Late]). One whose caller gave up before
		// it started takes no connection.
		if err := n.slow.Wait(ctx, n.noIdle); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return call(ctx)
	})
	return v, n.fail(ctx, err)
}

// noIdle reports whether the client's pool has no idle connection.
func (n *node) noIdle() bool { return n.client.PoolStats().IdleConns == 0 }

// fail makes err fit for the caller: a failure to get a reply as ctx ended
// wraps ctx.Err(), and the password never shows. Error replies pass as they
// are, their message starting with the Redis error code.
// A request that failed past its deadline makes the node slow (inline).
func (n *node) fail(ctx context.Context, err error) error {
	if err != nil && !isReply(err) && deadlinePassed(ctx) {
		n.slow.TimedOut()
	}
	return adapterkit.Fail(ctx, err, n.password, isReply)
}

// deadlinePassed reports whether ctx ended or its deadline has passed.
func deadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(d)
}

// isReply reports whether err is an error reply of the server.
func isReply(err error) bool { return adapterkit.IsReply[redis.Error](err) }
