package rueidis

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
)

var (
	_ driver.Node   = (*node)(nil)
	_ driver.Pinger = (*node)(nil)
)

// errClosed is returned by a node's calls after its Close.
var errClosed = errors.New("rueidis: node closed")

// node is one Redis master reached through a rueidis client. Every call
// shares the client, whose automatic pipelining batches concurrent requests
// over a few connections.
type node struct {
	addr string
	// owned says that the node made the client and Close closes it.
	owned bool
	// sharded is set for a client in cluster mode (cluster.go).
	sharded bool
	// hideDeadline is set for clients the user built, which may not
	// pipeline always: see [noDeadline].
	hideDeadline bool

	// ref holds the client once there is one. Eval reads it without a lock.
	ref atomic.Pointer[clientRef]

	// lastReply is when the server last answered, in nanoseconds since
	// born, or 0 after a failure: see guard.go.
	born          time.Time
	lastReply     atomic.Int64
	healthyWindow time.Duration

	// calls is held for reading by every use of the client and for writing
	// by Close, which therefore never closes the client under a call, and
	// after which no call uses it: rueidis would dial a connection for a
	// call made after its Close. closed is set under calls' write lock; wg
	// counts the goroutines a call leaves running (guard.go, connect.go),
	// which Close waits for.
	calls  sync.RWMutex
	closed atomic.Bool
	wg     sync.WaitGroup

	// conns are the connections of a client the node made, which Close
	// closes if the client's own Close has not ended after closeGrace
	// (conns.go).
	conns      *conns
	closeGrace time.Duration

	// Connecting on first use, for nodes whose server was down at Open:
	// opt is what to connect with, dialing the attempt under way (guarded
	// by mu).
	opt     rueidisclient.ClientOption
	mu      sync.Mutex
	dialing *attempt
}

type clientRef struct{ rueidisclient.Client }

// NewNode returns a node that runs scripts through c, a client the caller
// built and keeps: the node's Close does not close c. The node's Addr is the
// address c is connected to (for a client of several nodes, their sorted
// addresses joined by commas).
//
// rueidis sends a lone request with the context's deadline as the socket
// deadline unless the client was built with AlwaysPipelining, and in that
// mode does not see a context cancelled before its deadline; the node hides
// the deadline from c so that every call waits on the context.
func NewNode(c rueidisclient.Client) driver.Node {
	n := &node{addr: clientAddr(c), sharded: isCluster(c), hideDeadline: true, born: time.Now(), healthyWindow: defaultHealthyWindow}
	n.ref.Store(&clientRef{c})
	return n
}

func clientAddr(c rueidisclient.Client) string {
	nodes := c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return Name
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}

// Addr returns the node's host:port.
func (n *node) Addr() string { return n.addr }

// Eval runs s by EVALSHA and, when the server does not have it cached, by
// EVAL, and normalizes the reply as package driver documents.
func (n *node) Eval(ctx context.Context, s *driver.Script, keys []string, args []string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := n.client(ctx)
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	if n.healthy() {
		return n.eval(ctx, c, s, keys, args)
	}
	return n.guarded(ctx, func() (any, error) { return n.eval(ctx, c, s, keys, args) })
}

func (n *node) eval(ctx context.Context, c rueidisclient.Client, s *driver.Script, keys, args []string) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	n.calls.RLock()
	defer n.calls.RUnlock()
	if n.closed.Load() {
		return nil, errClosed
	}
	dctx := n.callContext(ctx)
	numkeys := int64(len(keys))
	res := c.Do(dctx, c.B().Evalsha().Sha1(s.Hash).Numkeys(numkeys).Key(keys...).Arg(args...).Build())
	msg, err := res.ToMessage()
	if err != nil && res.NonRedisError() == nil && driver.IsNoScript(err) {
		res = c.Do(dctx, c.B().Eval().Script(s.Source).Numkeys(numkeys).Key(keys...).Arg(args...).Build())
		msg, _ = res.ToMessage()
	}
	if err := res.NonRedisError(); err != nil {
		n.sawFailure(ctx)
		return nil, ctxError(ctx, err)
	}
	n.sawReply()
	return normalize(&msg)
}

// SetNXGet sends SET key value NX GET PX ms, as [driver.Setter] documents.
func (n *node) SetNXGet(ctx context.Context, key, val, ms string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := n.client(ctx)
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	if n.healthy() {
		return n.setNXGet(ctx, c, key, val, ms)
	}
	return n.guarded(ctx, func() (any, error) { return n.setNXGet(ctx, c, key, val, ms) })
}

func (n *node) setNXGet(ctx context.Context, c rueidisclient.Client, key, val, ms string) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	n.calls.RLock()
	defer n.calls.RUnlock()
	if n.closed.Load() {
		return nil, errClosed
	}
	res := c.Do(n.callContext(ctx), c.B().Arbitrary("SET").Keys(key).Args(val, "NX", "GET", "PX", ms).Build())
	if err := res.NonRedisError(); err != nil {
		n.sawFailure(ctx)
		return nil, ctxError(ctx, err)
	}
	n.sawReply()
	msg, _ := res.ToMessage()
	return normalize(&msg)
}

// Ping sends PING.
func (n *node) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := n.client(ctx)
	if err != nil {
		return ctxError(ctx, err)
	}
	if n.healthy() {
		_, err = n.ping(ctx, c)
	} else {
		_, err = n.guarded(ctx, func() (any, error) { return n.ping(ctx, c) })
	}
	return err
}

func (n *node) ping(ctx context.Context, c rueidisclient.Client) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	n.calls.RLock()
	defer n.calls.RUnlock()
	if n.closed.Load() {
		return nil, errClosed
	}
	res := c.Do(n.callContext(ctx), c.B().Ping().Build())
	if err := res.NonRedisError(); err != nil {
		n.sawFailure(ctx)
		return nil, ctxError(ctx, err)
	}
	n.sawReply()
	msg, _ := res.ToMessage()
	return normalize(&msg)
}

// Close closes the client if the node made it, after the calls under way
// and a connection attempt under way have ended. It waits at most the write
// timeout for the server to answer rueidis' QUIT, then closes the
// connections. Calls after Close fail.
func (n *node) Close() error {
	n.calls.Lock()
	already := n.closed.Swap(true)
	n.calls.Unlock()
	if already {
		return nil
	}
	n.wg.Wait()
	if ref := n.ref.Swap(nil); ref != nil && n.owned {
		return n.closeClient(ref.Client)
	}
	return nil
}
