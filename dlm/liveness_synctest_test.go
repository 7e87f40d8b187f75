//go:build go1.25

// When a waiter obtains a lock whose holder left it without a release that
// names it, on testing/synctest's fake clock over memlock's in-memory
// nodes. liveness_redis_test.go keeps, on real redis-server processes, that
// the same waiters obtain the lock at all, by the path these tests time.
// synctest_test.go explains the build constraint; the go:debug line of
// wakememlock_synctest_test.go covers this file too.

package dlm_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// TestCrashedHolderOnClock checks, on the fake clock, that a waiter whose
// retry pace (15 to 30 s) is far slower than the TTL obtains a lock whose
// holder crashed (it never releases: nothing is announced) within a node
// timeout and a millisecond of the end of the holder's validity: the
// refusal said how long the refusing keys live, and the waiter tries again
// then. TestWaiterTakesCrashedHoldersKeys keeps, on redis-server, that the
// waiter obtains the lock long before its retry could.
func TestCrashedHolderOnClock(t *testing.T) {
	t.Parallel()
	const (
		ttl         = time.Second
		nodeTimeout = 200 * time.Millisecond
	)
	for _, nodes := range []int{1, 3} {
		synctest.Test(t, func(t *testing.T) {
			ns := asDriverNodes(memNodes(nodes))
			holder := memManager(t, ns, dlm.WithTTL(ttl), dlm.WithNodeTimeout(nodeTimeout))
			waiter := memManager(t, ns, dlm.WithRetry(0, dlm.FixedBackoff(30*time.Second)), dlm.WithNodeTimeout(nodeTimeout))
			ctx := context.Background()
			held, err := holder.Lock(ctx, "crash")
			if err != nil {
				t.Fatal(err)
			}
			runsOut := held.Until()
			expires := time.Now().Add(ttl) // the fake nodes answer at once
			r := <-lockAsync(waiter, "crash")
			if r.err != nil {
				t.Fatalf("%d nodes: the waiter's Lock = %v; want the lock", nodes, r.err)
			}
			defer r.l.Unlock(ctx)
			if r.at.Before(expires) {
				t.Errorf("%d nodes: the waiter obtained the lock %v before the crashed holder's keys expired", nodes, expires.Sub(r.at))
			}
			if late := r.at.Sub(runsOut); late > nodeTimeout+time.Millisecond {
				t.Errorf("%d nodes: the waiter obtained the lock %v after the crashed holder's validity ended; want it within %v",
					nodes, late, nodeTimeout+time.Millisecond)
			}
		})
	}
}

// TestGiveUpPassesTurnOnClock checks, on the fake clock, that a waiter
// whose context ends while the lock is handed to it, or just before, passes
// its turn to the waiter behind it, which obtains the lock within two node
// timeouts of the release (the reservation of a key handed to the waiter
// that left), not at its retry; in the fair mode and the default one.
// TestWaiterGivingUpPassesItsTurn keeps, on redis-server, that the second
// waiter obtains the lock, woken rather than retried.
func TestGiveUpPassesTurnOnClock(t *testing.T) {
	t.Parallel()
	const nodeTimeout = 200 * time.Millisecond
	for _, tc := range []struct {
		name         string
		opts         []dlm.ManagerOption
		releaseFirst bool // the release comes before the first waiter gives up
	}{
		{"default, gives up then released", nil, false},
		{"default, released then gives up", nil, true},
		{"fair, gives up then released", []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{})}, false},
		{"fair, released then gives up", []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ns := asDriverNodes(memNodes(3))
				opts := append([]dlm.ManagerOption{dlm.WithNodeTimeout(nodeTimeout)}, tc.opts...)
				ctx := context.Background()
				held, err := memManager(t, ns, opts...).Lock(ctx, "turn")
				if err != nil {
					t.Fatal(err)
				}
				firstCtx, giveUp := context.WithCancel(ctx)
				defer giveUp()
				first := lockAsyncCtx(firstCtx, memManager(t, ns, opts...), "turn")
				synctest.Wait() // refused, in line
				second := lockAsync(memManager(t, ns, opts...), "turn")
				synctest.Wait() // refused, in line behind the first
				if tc.releaseFirst {
					if err := held.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
					giveUp()
				} else {
					giveUp()
					if r := <-first; r.err == nil {
						t.Fatalf("the first waiter obtained the lock while it was held")
					}
					if err := held.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
				}
				released := time.Now()
				if tc.releaseFirst {
					if r := <-first; r.err == nil {
						r.l.Unlock(ctx)
					}
				}
				r := <-second
				if r.err != nil {
					t.Fatalf("the second waiter's Lock = %v", r.err)
				}
				r.l.Unlock(ctx)
				if d := r.at.Sub(released); d > 2*nodeTimeout {
					t.Errorf("the second waiter obtained the lock %v after the release; want it within %v (its retry: %v to %v)",
						d, 2*nodeTimeout, clockRetry/2, clockRetry)
				}
			})
		})
	}
}
