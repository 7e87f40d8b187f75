package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestHostileTimeLeftCount checks, on redis-server, that one node of
// three answering each refusal with a PTTL of 1 ms, while the holder keeps
// the lock, does not set the pace of a waiter: blocked for 3 s, it makes no
// more attempts than its pace allows, a sixth of its place's life (2 s)
// between attempts as its manager hears the releases; and, where the
// holder lacks the key on the third node, whose grant leaves the liar's
// refusal to decide when a quorum could be free, one attempt per node
// timeout at most. It used to try again a millisecond after each refusal.
// TestHostileTimeLeftOnClock proves the same paces on the fake clock; here
// a busy machine can only make the attempts fewer.
func TestHostileTimeLeftCount(t *testing.T) {
	t.Parallel()
	const (
		window    = 3 * time.Second
		placePace = dlm.DefaultPlaceExpiry / 6
	)
	for _, free := range []int{0, 1} {
		t.Run(fmt.Sprintf("%d free", free), func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, 3)
			nodeTimeout := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
			bound := int64(window/placePace) + 2
			if free > 0 {
				bound = int64(window/nodeTimeout) + 2
			}
			plain := make([]driver.Node, len(srvs))
			for i, s := range srvs {
				plain[i] = respNode(t, s.Addr(), "")
			}
			nodes, honestEvals := shortLeftNodes(plain, 0, true)
			holder, err := dlm.New(plain, holdEverywhere(t, srvs[0]))
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			attempts := &attemptCounter{}
			waiter, err := dlm.New(nodes, dlm.WithNodeTimeout(nodeTimeout), dlm.WithHook(attempts))
			if err != nil {
				t.Fatal(err)
			}
			defer waiter.Close()
			ctx := context.Background()
			held, err := holder.TryLock(ctx, "k", dlm.WithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			defer held.Unlock(ctx)
			awaitHeld(t, srvs, "k")
			for _, s := range srvs[len(srvs)-free:] {
				if _, err := s.Do("DEL", "redlock:{k}"); err != nil {
					t.Fatal(err)
				}
			}
			honestEvals.Store(0)
			wctx, cancel := context.WithTimeout(ctx, window)
			defer cancel()
			if r := <-lockAsyncCtx(wctx, waiter, "k"); !errors.Is(r.err, context.DeadlineExceeded) {
				t.Fatalf("the waiter's Lock while the holder keeps the lock = %v; want DeadlineExceeded", r.err)
			}
			got := attempts.n.Load()
			t.Logf("%d attempts in %v with node 0 answering PTTL 1, %d scripts on the honest nodes (node timeout %v)", got, window, honestEvals.Load(), nodeTimeout)
			if got > bound {
				t.Errorf("a waiter made %d attempts in %v with node 0 answering each refusal with PTTL 1; want at most %d", got, window, bound)
			}
		})
	}
}

// shortLeftNode is a node whose refusals of the mutex's acquire say that
// the refusing key runs out in a millisecond, whatever it holds, when lie
// is set: a hostile node's replies. Its acquire requests take delay. It
// counts the scripts it runs in evals.
type shortLeftNode struct {
	driver.Node
	lie   bool
	delay time.Duration
	evals *atomic.Int64
}

func (n shortLeftNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	n.evals.Add(1)
	if !isAcquire(s) {
		return n.Node.Eval(ctx, s, keys, args)
	}
	time.Sleep(n.delay)
	v, err := n.Node.Eval(ctx, s, keys, args)
	if !n.lie {
		return v, err
	}
	if r, ok := v.([]any); ok && len(r) >= 3 && r[0] == int64(0) {
		r = append([]any(nil), r...)
		r[2] = int64(1)
		return r, err
	}
	return v, err
}

func (n shortLeftNode) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	return n.Node.(driver.Subscriber).Subscribe(ctx, h)
}

// isAcquire reports whether s is one of the mutex's acquire scripts.
func isAcquire(s *driver.Script) bool {
	switch s.Hash {
	case script.Acquire.Hash, script.FencedAcquire.Hash, script.GuardedAcquire.Hash, script.GuardedFencedAcquire.Hash:
		return true
	}
	return false
}

// shortLeftNodes wraps nodes as shortLeftNodes, node 0 lying when hostile,
// and returns them with the count of the scripts the honest ones ran.
// Node 0 and the last free ones answer acquire requests at once, the
// others a millisecond later: every vote counts node 0's refusal, and the
// free nodes' grants.
func shortLeftNodes(nodes []driver.Node, free int, hostile bool) ([]driver.Node, *atomic.Int64) {
	honest, liar := &atomic.Int64{}, &atomic.Int64{}
	out := make([]driver.Node, len(nodes))
	for i, n := range nodes {
		var delay time.Duration
		if i > 0 && i < len(nodes)-free {
			delay = time.Millisecond
		}
		if i == 0 {
			out[i] = shortLeftNode{Node: n, lie: hostile, delay: delay, evals: liar}
		} else {
			out[i] = shortLeftNode{Node: n, delay: delay, evals: honest}
		}
	}
	return out, honest
}
