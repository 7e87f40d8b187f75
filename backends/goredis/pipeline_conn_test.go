package goredis

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// errNoRoute is the dial error of the unreachable node below.
var errNoRoute = errors.New("test dialer: no route to node")

// TestBatchWithoutConnection checks that the requests of a batch that could
// not get a connection fail with the client's error. go-redis v9.0 leaves
// the commands of such a pipeline with neither a reply nor an error; read as
// they are, SetNXGet reported a nil reply, the key free and set, from a node
// it never reached, and a manager counted that node's vote for the lock, so
// that two clients held it at once. Eval and SetNXGet alike must report the
// failure.
func TestBatchWithoutConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, n *node) (any, error)
	}{
		{"SetNXGet", func(ctx context.Context, n *node) (any, error) { return n.SetNXGet(ctx, "k", "secret", "60000") }},
		{"Eval", func(ctx context.Context, n *node) (any, error) {
			return n.Eval(ctx, driver.NewScript(echo), nil, []string{"x"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			var dials atomic.Int64
			c := redis.NewClient(&redis.Options{
				Addr: "unreachable.invalid:6379", ContextTimeoutEnabled: true, MaxRetries: -1,
				Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
					if dials.Add(1) == 1 {
						<-release // the first request waits here while the others line up
					}
					return nil, errNoRoute
				},
			})
			t.Cleanup(func() { c.Close() })
			n := NewNode(c).(*node)
			const calls = 3
			type result struct {
				v   any
				err error
			}
			results := make(chan result, calls)
			call := func() {
				ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(time.Minute))
				defer cancel()
				v, err := tc.call(ctx, n)
				results <- result{v, err}
			}
			go call()
			for dials.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			for range calls - 1 {
				go call()
			}
			// The first request leads alone, dialing; the others wait
			// for it and then go as one batch, a pipeline.
			for queued := 0; queued < calls-1; {
				time.Sleep(time.Millisecond)
				n.batch.mu.Lock()
				queued = len(n.batch.queue)
				n.batch.mu.Unlock()
			}
			close(release)
			for range calls {
				r := <-results
				if !errors.Is(r.err, errNoRoute) || r.v != nil {
					t.Errorf("%s on a node that cannot be dialed = %v, %v; want nil and an error wrapping %q", tc.name, r.v, r.err, errNoRoute)
				}
			}
		})
	}
}

// cuttableConn is a connection that fails every write once its node is cut
// from the client.
type cuttableConn struct {
	net.Conn
	cut *atomic.Bool
}

func (c cuttableConn) Write(b []byte) (int, error) {
	if c.cut.Load() {
		return 0, errNoRoute
	}
	return c.Conn.Write(b)
}

// TestNoGrantFromUnreachableNodes shows the two holders that the batch
// without a connection made: manager B holds a lock on three real servers;
// manager A, cut from two of them (its connections there broken, new ones
// refused), tries the same lock from three callers at once. Each cut node
// sends the first request alone and the other two as one batch, which gets
// no connection. A must not obtain the lock: it reaches one node, which B
// holds.
func TestNoGrantFromUnreachableNodes(t *testing.T) {
	t.Parallel()
	servers := redistest.StartServers(t, 3)
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = "redis+goredis://" + s.Addr()
	}
	// Nothing here waits out the node timeout on a working build: the
	// cut nodes' requests end when the gate opens. It only has to outlast
	// the callers' lining up on this run's pace, so it is ten times the
	// slack of that pace (10 s at least), far below the TTL.
	pace := redistest.MeasurePace(t, servers[0])
	for _, s := range servers[1:] {
		pace = pace.Max(redistest.MeasurePace(t, s))
	}
	nodeTimeout := 10 * pace.Stretch(time.Second)
	ttl := max(time.Minute, 3*nodeTimeout)
	t.Logf("pace %v: node timeout %v, TTL %v", pace, nodeTimeout, ttl)
	b, err := dlm.Open(urls, dlm.WithNodeTimeout(nodeTimeout), dlm.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	var cut atomic.Bool
	gate := make(chan struct{})
	var aNodes []*node
	nodes := make([]driver.Node, len(servers))
	for i, s := range servers {
		cuttable := i > 0
		c := redis.NewClient(&redis.Options{
			Addr: s.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 1,
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if cuttable && cut.Load() {
					<-gate
					return nil, errNoRoute
				}
				conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil || !cuttable {
					return conn, err
				}
				return cuttableConn{conn, &cut}, nil
			},
		})
		t.Cleanup(func() { c.Close() })
		n := NewNode(c).(*node)
		nodes[i] = n
		aNodes = append(aNodes, n)
	}
	a, err := dlm.New(nodes, dlm.WithNodeTimeout(nodeTimeout), dlm.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ctx := context.Background()
	// A's first lock runs the acquire script on every node, after which A
	// sends SET NX to a free key.
	warm, err := a.TryLock(ctx, "warm")
	if err != nil {
		t.Fatalf("A's first TryLock, every node reachable: %v", err)
	}
	if err := warm.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	held, err := b.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("B's TryLock: %v", err)
	}
	defer held.Unlock(ctx)

	cut.Store(true)
	for _, n := range aNodes[1:] {
		// The pooled connection breaks on this request: the next dials.
		if _, err := n.Eval(ctx, driver.NewScript(echo), nil, []string{"x"}); err == nil {
			t.Fatal("a request through a cut connection succeeded")
		}
	}
	const callers = 3
	errs := make(chan error, callers)
	asked := time.Now()
	for range callers {
		go func() {
			l, err := a.TryLock(ctx, "k")
			if err == nil {
				l.Unlock(ctx)
			}
			errs <- err
		}()
	}
	// On each cut node, one request dials (and waits at the gate) while
	// the other two line up behind it.
	// A queued request leaves at its node deadline: the callers must line
	// up before it, or the test shows nothing.
	for _, n := range aNodes[1:] {
		for queued := 0; queued < callers-1; {
			if time.Since(asked) > nodeTimeout {
				t.Fatalf("%d of %d requests lined up behind the dialing one %v after the callers asked; want %d before the node timeout", queued, callers-1, time.Since(asked), callers-1)
			}
			time.Sleep(time.Millisecond)
			n.batch.mu.Lock()
			queued = len(n.batch.queue)
			n.batch.mu.Unlock()
		}
	}
	close(gate)
	for range callers {
		if err := <-errs; !errors.Is(err, dlm.ErrNotObtained) && !errors.Is(err, dlm.ErrUnavailable) {
			t.Errorf("A's TryLock of a lock B holds, A cut from two of three nodes = %v; want ErrNotObtained or ErrUnavailable", err)
		}
	}
}
