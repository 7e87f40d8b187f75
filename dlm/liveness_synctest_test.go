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
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
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

// TestReleaseReachesAWaiterOnClock checks, on the fake clock, that once a
// release reached a quorum of the nodes, a waiter obtains the lock within a
// few node timeouts, whatever the order in which the nodes hear the
// waiters: two waiters, each in a manager of its own whose requests reach
// the nodes a few milliseconds apart, race for every release, which reaches
// the third node late, with retries so slow (5 to 10 s) that only a
// wake-up explains a grant. TestReleaseReachesAWaiter keeps, on
// redis-server, that both waiters obtain the lock woken, not retried.
func TestReleaseReachesAWaiterOnClock(t *testing.T) {
	t.Parallel()
	const (
		trials      = 20
		nodeTimeout = 200 * time.Millisecond
		bound       = 5 * nodeTimeout
	)
	synctest.Test(t, func(t *testing.T) {
		mem := memNodes(3)
		opts := []dlm.ManagerOption{dlm.WithNodeTimeout(nodeTimeout)}
		managerWith := func(delays ...time.Duration) *dlm.Manager {
			nodes := make([]driver.Node, len(mem))
			for i, n := range mem {
				nodes[i] = slowSubscriber{slowRequests{n, delays[i]}, n}
			}
			return memManager(t, nodes, opts...)
		}
		holderNodes := asDriverNodes(mem)
		holderNodes[2] = slowRelease{mem[2], 30 * time.Millisecond}
		holder := memManager(t, holderNodes, opts...)
		// Node 0 hears a first, node 1 hears b first.
		a := managerWith(0, 6*time.Millisecond, 3*time.Millisecond)
		b := managerWith(6*time.Millisecond, 0, 3*time.Millisecond)
		ctx := context.Background()
		for trial := range trials {
			key := fmt.Sprintf("race-%d", trial)
			held, err := holder.Lock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			ra, rb := lockAsync(a, key), lockAsync(b, key)
			synctest.Wait() // both refused, in line and listening
			released := time.Now()
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			second := rb
			var r lockResult
			select {
			case r = <-ra:
			case r = <-rb:
				second = ra
			}
			if r.err != nil {
				t.Fatalf("trial %d: Lock = %v", trial, r.err)
			}
			if d := r.at.Sub(released); d > bound {
				t.Errorf("trial %d: the first waiter obtained the lock %v after its release; want it within %v", trial, d, bound)
			}
			unlocked := time.Now()
			if err := r.l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			r = <-second
			if r.err != nil {
				t.Fatalf("trial %d: second Lock = %v", trial, r.err)
			}
			r.l.Unlock(ctx)
			if d := r.at.Sub(unlocked); d > bound {
				t.Errorf("trial %d: the second waiter obtained the lock %v after the first released it; want it within %v", trial, d, bound)
			}
		}
	})
}
