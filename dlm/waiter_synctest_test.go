//go:build go1.25

// How often a waiter refused by a holder tries again, on testing/synctest's
// fake clock over memlock's nodes, when one node lies about how long the
// holder's keys live. synctest_test.go explains the build constraint;
// the go:debug line of wakememlock_synctest_test.go covers this file too.

package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// TestHostileTimeLeftOnClock checks, on the fake clock, that one node
// answering each refusal with a PTTL of 1 ms, while the holder keeps the
// lock, does not set the pace of a waiter, which tries again when the
// holder's keys run out: a waiter blocked for 3 s makes no more attempts
// than its pace allows — with the default retry, a sixth of its place's
// life (2 s) between attempts, as its manager hears the releases — where
// the refusals of the honest nodes decide when a quorum could be free.
// Where the liar's refusal alone decides it, as when the holder lacks the
// keys on as many nodes as the waiter's quorum lacks but one (the waiter's
// attempts take those; here their grants come first, so that the vote
// counts every refusal), the waiter tries again no sooner than a node
// timeout after its attempt. A waiter used to try again 1 ms after each
// refusal: a thousand attempts. TestHostileTimeLeftCount keeps, on
// redis-server, the same counts.
func TestHostileTimeLeftOnClock(t *testing.T) {
	t.Parallel()
	const (
		window      = 3 * time.Second
		nodeTimeout = 250 * time.Millisecond
		// placePace is the shortest wait of a refused waiter that hears
		// the releases: a sixth of its place's life.
		placePace = dlm.DefaultPlaceExpiry / 6
	)
	for _, tc := range []struct {
		nodes int
		free  int   // nodes on which the holder lacks the keys
		bound int64 // of the attempts within window, with the liar
	}{
		{3, 0, int64(window/placePace) + 2},
		{5, 0, int64(window/placePace) + 2},
		{5, 1, int64(window/placePace) + 2},
		{3, 1, int64(window/nodeTimeout) + 2},
		{5, 2, int64(window/nodeTimeout) + 2},
	} {
		t.Run(fmt.Sprintf("%d nodes, %d free", tc.nodes, tc.free), func(t *testing.T) {
			t.Parallel()
			var got [2]int64 // attempts: honest, hostile
			var evals [2]int64
			for i, hostile := range []bool{false, true} {
				synctest.Test(t, func(t *testing.T) {
					mem := memNodes(tc.nodes)
					nodes, honestEvals := shortLeftNodes(asDriverNodes(mem), tc.free, hostile)
					holder, err := dlm.New(nodes, dlm.WithTTL(time.Minute))
					if err != nil {
						t.Fatal(err)
					}
					defer holder.Close()
					attempts := &attemptCounter{}
					waiter, err := dlm.New(nodes, dlm.WithTTL(time.Minute), dlm.WithNodeTimeout(nodeTimeout), dlm.WithHook(attempts))
					if err != nil {
						t.Fatal(err)
					}
					defer waiter.Close()
					ctx := context.Background()
					free := mem[tc.nodes-tc.free:]
					for _, n := range free {
						n.SetDown(true)
					}
					held, err := holder.TryLock(ctx, "k")
					if err != nil {
						t.Fatal(err)
					}
					defer held.Unlock(ctx)
					for _, n := range free {
						n.SetDown(false)
					}
					honestEvals.Store(0)
					wctx, cancel := context.WithTimeout(ctx, window)
					defer cancel()
					if r := <-lockAsyncCtx(wctx, waiter, "k"); !errors.Is(r.err, context.DeadlineExceeded) {
						t.Fatalf("the waiter's Lock while the holder keeps the lock = %v; want DeadlineExceeded", r.err)
					}
					got[i], evals[i] = attempts.n.Load(), honestEvals.Load()
				})
			}
			t.Logf("%d nodes, %d free: attempts in %v: %d with honest nodes, %d with node 0 answering PTTL 1 (scripts on the honest nodes: %d, %d)",
				tc.nodes, tc.free, window, got[0], got[1], evals[0], evals[1])
			if got[1] > tc.bound {
				t.Errorf("a waiter made %d attempts in %v with node 0 answering each refusal with PTTL 1 (%d with honest nodes); want at most %d",
					got[1], window, got[0], tc.bound)
			}
		})
	}
}

// TestTimeLeftFloorOnClock checks, on the fake clock, when a waiter whose
// retry pace (15 to 30 s) is far slower than the TTL obtains a lock whose
// holder crashed, by how long the holder's keys have left when the waiter
// begins: a millisecond after they run out, as the refusals said, but no
// sooner than a node timeout after its attempt, whatever they said.
func TestTimeLeftFloorOnClock(t *testing.T) {
	t.Parallel()
	const (
		ttl         = time.Second
		nodeTimeout = 200 * time.Millisecond
	)
	for _, tc := range []struct {
		left, want time.Duration // the keys' time left; when the waiter obtains the lock
	}{
		{500 * time.Millisecond, 501 * time.Millisecond},
		{nodeTimeout, nodeTimeout + time.Millisecond},
		{nodeTimeout - time.Millisecond, nodeTimeout},
		{50 * time.Millisecond, nodeTimeout},
		{time.Millisecond, nodeTimeout},
	} {
		t.Run(fmt.Sprint(tc.left), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ns := asDriverNodes(memNodes(3))
				holder := memManager(t, ns, dlm.WithTTL(ttl))
				waiter := memManager(t, ns, dlm.WithRetry(0, dlm.FixedBackoff(30*time.Second)), dlm.WithNodeTimeout(nodeTimeout))
				ctx := context.Background()
				if _, err := holder.Lock(ctx, "crash"); err != nil { // never released
					t.Fatal(err)
				}
				time.Sleep(ttl - tc.left)
				start := time.Now()
				r := <-lockAsync(waiter, "crash")
				if r.err != nil {
					t.Fatalf("the waiter's Lock = %v; want the lock", r.err)
				}
				defer r.l.Unlock(ctx)
				if got := r.at.Sub(start); got != tc.want {
					t.Errorf("with the keys' %v left, the waiter obtained the lock after %v; want %v", tc.left, got, tc.want)
				}
			})
		})
	}
}
