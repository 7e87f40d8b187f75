//go:build go1.25

// Liveness after a crash and with a majority of nodes down, on
// testing/synctest's fake clock: the claims about when that the chaos
// suite (internal/chaos, TestChaosFast) measures on real processes only as
// figures. See synctest_test.go for the build constraint; its go:debug line
// covers this file too.

package dlm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRegainAfterHolderCrash checks when a waiter regains a lock whose
// holder crashed (its manager closed with the lock held, which releases
// nothing): never before the crashed holder's keys expire, and within the
// TTL and one backoff of the crash — the keys expire a TTL after the
// holder's attempt, and a waiting Lock tries again at least once a backoff
// (the chaos clients' ExponentialBackoff(5ms, 50ms)). A minority of nodes
// down or black-holed delays the regain by at most the node timeout of the
// attempt under way when the keys expire, and slow replies by their round
// trip.
func TestRegainAfterHolderCrash(t *testing.T) {
	t.Parallel()
	const (
		ttl         = 500 * time.Millisecond
		nodeTimeout = 100 * time.Millisecond
		maxBackoff  = 50 * time.Millisecond
	)
	for _, tc := range []struct {
		name    string
		crashAt time.Duration // after the holder's grant
		down    fault         // of nodes 3 and 4 once the holder has the lock
		delay   time.Duration // of every request
		bound   time.Duration // beyond the crash and the TTL
	}{
		{"crash at once", 0, healthy, 0, maxBackoff},
		{"crash midway", ttl / 2, healthy, 0, maxBackoff},
		{"crash near the end", ttl - 10*time.Millisecond, healthy, 0, maxBackoff},
		{"two nodes killed", ttl / 4, refuse, 0, maxBackoff},
		{"two nodes black-holed", ttl / 4, hang, 0, maxBackoff + nodeTimeout},
		{"slow replies", ttl / 4, healthy, 5 * time.Millisecond, maxBackoff + 2*5*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				for _, f := range fs {
					f.inject(healthy, tc.delay)
				}
				opts := []ManagerOption{WithTTL(ttl), WithNodeTimeout(nodeTimeout)}
				holder := newManager(t, fs, opts...)
				waiter := newManager(t, fs, append(opts, WithRetry(0, ExponentialBackoff(5*time.Millisecond, maxBackoff)))...)
				start := time.Now()
				held, err := holder.Lock(context.Background(), "k")
				if err != nil {
					t.Fatalf("holder's Lock(%q) = %v", "k", err)
				}
				granted := time.Now()
				expires := start.Add(tc.delay + ttl) // when the nodes set the key, plus the TTL
				fs[3].inject(tc.down, tc.delay)
				fs[4].inject(tc.down, tc.delay)
				got := make(chan time.Time, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					l, err := waiter.Lock(ctx, "k")
					if err != nil {
						t.Errorf("waiter's Lock(%q) = %v; want the lock once the crashed holder's keys expire", "k", err)
						got <- time.Time{}
						return
					}
					got <- time.Now()
					_ = l.Unlock(context.Background())
				}()
				time.Sleep(tc.crashAt)
				crashed := time.Now()
				if err := holder.Close(); err != nil { // the lock is left to expire
					t.Fatalf("holder's Close() = %v", err)
				}
				at := <-got
				if at.IsZero() {
					return
				}
				if at.Before(expires) {
					t.Errorf("waiter obtained the lock at grant+%v, before the crashed holder's keys expire at grant+%v", at.Sub(granted), expires.Sub(granted))
				}
				if at.Before(held.Until()) {
					t.Errorf("waiter obtained the lock at grant+%v, within the crashed holder's validity (until grant+%v)", at.Sub(granted), held.Until().Sub(granted))
				}
				d, bound := at.Sub(crashed), ttl+tc.bound
				t.Logf("crashed at grant+%v; regained %v after the crash, %v after the keys expired (bound %v)", crashed.Sub(granted), d, at.Sub(expires), bound)
				if d > bound || at.Sub(expires) > tc.bound {
					t.Errorf("lock regained %v after its holder crashed, %v after its keys expired; want at most %v (TTL %v) and %v", d, at.Sub(expires), bound, ttl, tc.bound)
				}
			})
		})
	}
}

// TestMajorityDown checks how attempts fail with three of five nodes down
// (refusing connections, as killed nodes do) or black-holed (never
// answering): TryLock returns ErrUnavailable at once when three refuse, and
// after one node timeout when three hang; Lock with three tries returns
// ErrUnavailable after its attempts and backoffs; a Lock retrying until its
// context ends returns exactly at the context's deadline, wrapping
// DeadlineExceeded and keeping the class of its last attempt,
// ErrUnavailable.
func TestMajorityDown(t *testing.T) {
	t.Parallel()
	const (
		ttl         = 500 * time.Millisecond
		nodeTimeout = 100 * time.Millisecond
		backoff     = 10 * time.Millisecond
		ctxFor      = 300 * time.Millisecond
	)
	for _, tc := range []struct {
		name    string
		down    fault
		attempt time.Duration // how long one attempt takes
	}{
		{"three killed", refuse, 0},
		{"three black-holed", hang, nodeTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				for _, f := range fs[2:] {
					f.inject(tc.down, 0)
				}
				m := newManager(t, fs, WithTTL(ttl), WithNodeTimeout(nodeTimeout))
				ctx := context.Background()
				var err error
				if d := elapsed(func() { _, err = m.TryLock(ctx, "k") }); d != tc.attempt {
					t.Errorf("TryLock took %v; want %v", d, tc.attempt)
				}
				if !errors.Is(err, ErrUnavailable) {
					t.Errorf("TryLock = %v; want ErrUnavailable", err)
				}
				// Three attempts and two backoffs of half to all of backoff.
				lo, hi := 3*tc.attempt+backoff, 3*tc.attempt+2*backoff
				if d := elapsed(func() { _, err = m.Lock(ctx, "k", WithRetry(3, FixedBackoff(backoff))) }); d < lo || d > hi {
					t.Errorf("Lock with 3 tries took %v; want within [%v, %v]", d, lo, hi)
				}
				if !errors.Is(err, ErrUnavailable) {
					t.Errorf("Lock with 3 tries = %v; want ErrUnavailable", err)
				}
				cctx, cancel := context.WithTimeout(ctx, ctxFor)
				defer cancel()
				if d := elapsed(func() { _, err = m.Lock(cctx, "k") }); d != ctxFor {
					t.Errorf("Lock until its context ends returned after %v; want %v, the context's deadline", d, ctxFor)
				}
				if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrUnavailable) {
					t.Errorf("Lock until its context ends = %v; want DeadlineExceeded and ErrUnavailable", err)
				}
			})
		})
	}
}
