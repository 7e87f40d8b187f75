//go:build go1.25

// When a waiter is woken, on testing/synctest's fake clock, over memlock's
// in-memory nodes: they keep the lines of waiters and publish the wake-ups
// as Redis does, so the whole path — release, announcement, subscription,
// attempt — runs as on real servers, in no real time. wake_test.go keeps,
// on real redis-server processes, that the same waiters are woken at all.
// synctest_test.go explains the build constraint and the go:debug line.

//go:debug asynctimerchan=0

package dlm_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// clockRetry is the retry pace of the waiters on the fake clock: a waiter
// that obtains a lock before clockRetry/2 has passed since its previous
// attempt was woken, not retried.
const clockRetry = 10 * time.Second

// memManager returns a manager over nodes, whose waiters retry every 5 to
// 10 seconds unless woken, closed when the test ends.
func memManager(t *testing.T, nodes []driver.Node, opts ...dlm.ManagerOption) *dlm.Manager {
	t.Helper()
	m, err := dlm.New(nodes, append([]dlm.ManagerOption{dlm.WithRetry(0, dlm.FixedBackoff(clockRetry))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// release runs the release script of held's key on nodes as a node runs a
// release: loud, which hands the key to the head of its line and names that
// waiter, or quiet, which frees the key and names no one (as a release does
// where the key had expired, or as a DEL would).
func release(t *testing.T, held *dlm.Lock, loud bool, nodes ...driver.Node) {
	t.Helper()
	rk := "redlock:{" + held.Key() + "}"
	keys := append([]string{rk}, script.LineKeys(rk)...)
	mode := script.Quiet
	if loud {
		mode = script.Loud
	}
	args := []string{held.Handle().Secret, "", "0", "2000", "2000", script.ReleaseLock, script.Flag{Mode: mode}.Arg()}
	for _, n := range nodes {
		if v, err := n.Eval(context.Background(), script.Release, keys, args); err != nil || v != int64(1) {
			t.Fatalf("the release on %s = %v, %v; want 1", n.Addr(), v, err)
		}
	}
}

// TestWakeOnClock checks, on the fake clock, when a waiter blocked behind a
// holder obtains the lock once the holder's key is freed:
//   - the holder's Unlock (a release on every node, which names the waiter):
//     at the instant the Unlock returns, not at the waiter's next retry;
//   - the same after the waiter's subscriptions were cut and made again;
//   - a release that named the waiter on two nodes of five (fewer than its
//     quorum of three) and reached the other three, naming no one there, a
//     quarter of a node timeout later: exactly a node timeout after the
//     first naming, its grace for the rest of the release to arrive.
//
// The real-process tests TestWaiterWokenByRelease and
// TestWokenBeforeReleaseReachedQuorum keep, on redis-server, that these
// waiters are woken at all.
func TestWakeOnClock(t *testing.T) {
	t.Parallel()
	const nodeTimeout = time.Second
	for _, tc := range []struct {
		name string
		cut  bool // the waiter's subscriptions cut and made again first
		// named is how many nodes the release names the waiter on first;
		// 0: the holder's Unlock, on every node.
		named int
		want  time.Duration // from the release's start to the grant
	}{
		{name: "unlock", want: 0},
		{name: "unlock after the subscriptions were cut", cut: true, want: 0},
		{name: "named by fewer nodes than the quorum", named: 2, want: nodeTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				mem := memNodes(5)
				nodes := asDriverNodes(mem)
				holderM := memManager(t, nodes)
				waiterM := memManager(t, nodes, dlm.WithNodeTimeout(nodeTimeout))
				ctx := context.Background()
				// TryLock: the holder takes no place in line, so that a
				// release without its waiter id finds the waiter at the head.
				held, err := holderM.TryLock(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				// TryLock returns at a quorum; its requests still due
				// land before the waiter asks, which could otherwise
				// take a node first.
				synctest.Wait()
				waitStart := time.Now()
				res := lockAsync(waiterM, "k")
				synctest.Wait() // refused, in line and listening
				if tc.cut {
					for _, n := range mem {
						n.SetDown(true)
					}
					synctest.Wait()
					for _, n := range mem {
						n.SetDown(false)
					}
					time.Sleep(dlm.MaxReopen) // the subscriptions are made again
					synctest.Wait()
				}
				start := time.Now()
				if tc.named == 0 {
					if err := held.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
				} else {
					release(t, held, true, nodes[:tc.named]...)
					time.Sleep(nodeTimeout / 4)
					release(t, held, false, nodes[tc.named:]...)
				}
				r := <-res
				if r.err != nil {
					t.Fatalf("waiter's Lock = %v", r.err)
				}
				defer r.l.Unlock(ctx)
				if got := r.at.Sub(start); got != tc.want {
					t.Errorf("waiter obtained the lock %v after the release began; want %v (its next retry: %v to %v after its previous attempt; it began to wait %v before the release)",
						got, tc.want, clockRetry/2, clockRetry, start.Sub(waitStart))
				}
			})
		})
	}
}

// TestObserveOnClock checks, on the fake clock, when Observe reports an
// election's changes over memlock's nodes, which announce them as Redis
// does: a new leader, a resignation and the next leader at the instant they
// happen, not at the next poll (ObservePoll later); extensions never; and a
// leader whose manager closed without resigning once its keys expire, within
// its TTL and a poll. TestObserve keeps, on redis-server, that each change
// is reported at all, in order.
func TestObserveOnClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		nodes := asDriverNodes(memNodes(3))
		newM := func() *dlm.Manager {
			m, err := dlm.New(nodes, dlm.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			return m
		}
		observer, a, b := newM(), newM(), newM()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		obs, err := observe(ctx, observer, "watched")
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
		expect("no leader", dlm.Observation{}, 0)
		la, err := campaign(ctx, a, "watched", "alpha")
		if err != nil {
			t.Fatal(err)
		}
		expect("alpha leads", dlm.Observation{Leader: true, Value: "alpha"}, 0)
		select {
		case got := <-obs:
			t.Fatalf("observed %+v while alpha kept leading", got)
		case <-time.After(10 * ttl): // extensions are no changes
		}
		if err := la.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		expect("alpha resigned", dlm.Observation{}, 0)
		if _, err := campaign(ctx, b, "watched", "beta"); err != nil {
			t.Fatal(err)
		}
		expect("beta leads", dlm.Observation{Leader: true, Value: "beta"}, 0)
		b.Close()
		expect("beta's manager closed", dlm.Observation{}, ttl+dlm.ObservePoll)
	})
}

// TestOneNodeListenersOnClock checks, on the fake clock, that one node of
// three saying in every refusal that others listen on the key's broadcast
// channel, where nobody does, leaves a placed waiter whose manager hears
// the releases at its pace: each attempt a sixth to a third of its place's
// life after the end of the one before, as without the claim, not at its
// retry pace (30 to 60 ms here). TestOneNodeListenersKeepPace counts the
// same on real servers.
func TestOneNodeListenersOnClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const window = 30 * time.Second
		mem := memNodes(3)
		nodes := asDriverNodes(mem)
		claimer := &listenersClaimer{Node: nodes[0]}
		holderM := memManager(t, nodes)
		log := &attemptLog{}
		waiterM := memManager(t, []driver.Node{claimer, nodes[1], nodes[2]}, dlm.WithRetry(0, dlm.FixedBackoff(60*time.Millisecond)), dlm.WithHook(log))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		held, err := holderM.TryLock(ctx, "k", dlm.WithTTL(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		res := lockAsyncCtx(ctx, waiterM, "k")
		time.Sleep(window)
		cancel()
		if r := <-res; r.err == nil {
			t.Fatal("the waiter obtained a lock still held")
		}
		if err := held.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		log.mu.Lock()
		attempts := log.by[0]
		log.mu.Unlock()
		if claimer.claims.Load() == 0 {
			t.Fatal("the node said nothing; the test did not claim listeners")
		}
		least := dlm.DefaultPlaceExpiry / 6
		short := 0
		// The second attempt follows the first at once: the subscriptions
		// were made after it began.
		for i := 2; i < len(attempts); i++ {
			if gap := attempts[i].start.Sub(attempts[i-1].end); gap < least {
				short++
			}
		}
		t.Logf("%d attempts in %v, %d of them sooner than %v after the one before, while one node said others listen in %d refusals",
			len(attempts), window, short, least, claimer.claims.Load())
		if short > 0 {
			t.Errorf("%d of %d attempts came sooner than %v after the one before while one node said others listen; want none", short, len(attempts), least)
		}
	})
}
