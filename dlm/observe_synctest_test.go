//go:build go1.25

// When an observer reads an election under a flood of forged announcements,
// on testing/synctest's fake clock over memlock's in-memory nodes.
// TestObserveForgedGrantFlood keeps, on redis-server, how many reads such a
// flood costs. synctest_test.go explains the build constraint; the debug
// setting synctest needs is set once for the test binary, in
// wakememlock_synctest_test.go.

package dlm_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// forgingNode is a memlock node on which the test publishes as anyone
// allowed to publish there: forge passes a message to every subscription
// the node opened, as the node delivers one. It counts the reads of an
// election (script.Leader) it runs.
type forgingNode struct {
	*memlock.Node
	mu       sync.Mutex
	handlers []*serialHandler
	reads    atomic.Int64
}

// serialHandler passes the node's deliveries and the forged messages to h
// one at a time, as a driver.Subscription does.
type serialHandler struct {
	mu sync.Mutex
	h  driver.PubSubHandler
}

func (s *serialHandler) Message(channel, payload string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.Message(channel, payload)
}

func (s *serialHandler) Subscribed(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.Subscribed(channel)
}

func (n *forgingNode) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	sh := &serialHandler{h: h}
	sub, err := n.Node.Subscribe(ctx, sh)
	if err == nil {
		n.mu.Lock()
		n.handlers = append(n.handlers, sh)
		n.mu.Unlock()
	}
	return sub, err
}

func (n *forgingNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if s == script.Leader {
		n.reads.Add(1)
	}
	return n.Node.Eval(ctx, s, keys, args)
}

// forge delivers payload on channel to every subscription of n.
func (n *forgingNode) forge(channel, payload string) {
	n.mu.Lock()
	hs := n.handlers
	n.mu.Unlock()
	for _, h := range hs {
		h.Message(channel, payload)
	}
}

// TestObserveFloodOnClock floods, on the fake clock, an election's
// broadcast channel on one node of three with forged grants, one every
// 100 µs, while an observer follows it: the reads the flood starts are at
// most ObserveBurst at once and then one per node timeout, beyond the
// observer's own pace; a resignation and a new leader during the flood are
// each reported within a node timeout; and once the flood has stopped for
// as long as the burst takes to grow back, the next change is reported at
// the instant it happens, as TestObserveOnClock has it.
func TestObserveFloodOnClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const (
			nodeTimeout = 100 * time.Millisecond
			span        = time.Second
			name        = "flooded"
		)
		raw := memNodes(3)
		hostile := &forgingNode{Node: raw[0]}
		nodes := []driver.Node{hostile, raw[1], raw[2]}
		newM := func() *dlm.Manager {
			m, err := dlm.New(nodes, dlm.WithNodeTimeout(nodeTimeout))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			return m
		}
		observer, a, b := newM(), newM(), newM()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		la, err := campaign(ctx, a, name, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		obs, err := observe(ctx, observer, name)
		if err != nil {
			t.Fatalf("Observe = %v", err)
		}
		expect := func(what string, want dlm.Observation, within time.Duration) {
			t.Helper()
			start := time.Now()
			select {
			case got, ok := <-obs:
				if d := time.Since(start); !ok || got != want || d > within {
					t.Fatalf("%s: observed %+v (open %v) after %v; want %+v within %v", what, got, ok, d, want, within)
				}
			case <-time.After(within + time.Nanosecond):
				t.Fatalf("%s: nothing observed in %v; want %+v", what, within, want)
			}
		}
		expect("alpha leads", dlm.Observation{Leader: true, Value: "alpha"}, 0)

		channel := script.WakeChannel(dlm.DefaultKeyPrefix + "election:{" + name + "}")
		fctx, stop := context.WithCancel(ctx)
		flooding := make(chan struct{})
		go func() {
			defer close(flooding)
			for fctx.Err() == nil {
				hostile.forge(channel, script.WakeGrant)
				time.Sleep(100 * time.Microsecond)
			}
		}()
		before := hostile.reads.Load()
		time.Sleep(span)
		reads := hostile.reads.Load() - before
		// The burst, one per node timeout, and the observer's own reads,
		// every ObservePoll while alpha's keys are far from expiry, each
		// rounded up.
		burst := int64(dlm.ObserveBurst(len(nodes)))
		if bound := burst + int64(span/nodeTimeout) + 1 + int64(span/dlm.ObservePoll) + 1; reads > bound {
			t.Errorf("a flood of forged grants for %v made the observer read the election %d times; want at most %d", span, reads, bound)
		}
		t.Logf("a flood of forged grants for %v: %d reads (burst %d, node timeout %v)", span, reads, burst, nodeTimeout)
		select {
		case got := <-obs:
			t.Fatalf("observed %+v while alpha kept leading", got)
		default:
		}
		if err := la.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		expect("alpha resigned during the flood", dlm.Observation{}, nodeTimeout)
		lb, err := campaign(ctx, b, name, "beta")
		if err != nil {
			t.Fatal(err)
		}
		expect("beta leads during the flood", dlm.Observation{Leader: true, Value: "beta"}, nodeTimeout)
		stop()
		<-flooding
		time.Sleep(time.Duration(burst) * nodeTimeout)
		if err := lb.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		expect("beta resigned after the flood", dlm.Observation{}, 0)
	})
}
