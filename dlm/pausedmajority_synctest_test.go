//go:build go1.25

// When Do's fn learns that a frozen majority cost it the lock, on
// testing/synctest's fake clock. See synctest_test.go for the build
// constraint and the go:debug line that covers this file too.

package dlm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestPausedMajorityCancelsDo is the timing of dlmtest's
// PausedMajorityCancelsDo on virtual time: with 1, 3 or 5 nodes, a TTL of
// 5 s and a node timeout of a twentieth of it, a majority of the nodes
// freezes (never answers) while Do's fn runs. fn's context is cancelled,
// with a cause wrapping ErrLockLost, at the moment the manager reports the
// loss (EventLost's Start), no later than a loss guard before the lock's
// validity ends, and so before the keys can expire on any node (the
// acquire began at start, so they live until start + TTL at the earliest).
// A rival's TryLock while fn's context is live fails; Do returns
// ErrLockLost; once the nodes answer again and the keys expired, the lock
// is free.
func TestPausedMajorityCancelsDo(t *testing.T) {
	t.Parallel()
	const (
		ttl     = 5 * time.Second
		timeout = ttl / 20
	)
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(n)
				quorum := n/2 + 1
				var mu sync.Mutex
				var lostAt []time.Time
				lost := hookFunc(func(e *Event) {
					if e.Kind == EventLost && e.Key == "paused" {
						mu.Lock()
						lostAt = append(lostAt, e.Start)
						mu.Unlock()
					}
				})
				m := newManager(t, fs, WithTTL(ttl), WithNodeTimeout(timeout), WithHook(lost))
				guard := m.cfg.lossGuard()
				start := time.Now()
				var cancelledAt, until time.Time
				err := m.Do(context.Background(), "paused", func(fctx context.Context) error {
					time.Sleep(100 * time.Millisecond)
					for _, f := range fs[:quorum] {
						f.inject(hang, 0)
					}
					if _, err := m.TryLock(context.Background(), "paused"); !errors.Is(err, ErrUnavailable) {
						t.Errorf("rival TryLock with %d of %d nodes frozen, fn's context live = %v; want ErrUnavailable", quorum, n, err)
					}
					<-fctx.Done()
					cancelledAt = time.Now()
					until = LockFromContext(fctx).Until()
					if cause := context.Cause(fctx); !errors.Is(cause, ErrLockLost) {
						t.Errorf("context.Cause(fn's ctx) = %v; want ErrLockLost", cause)
					}
					return nil
				})
				if !errors.Is(err, ErrLockLost) {
					t.Errorf("Do with %d of %d nodes frozen = %v; want ErrLockLost", quorum, n, err)
				}
				mu.Lock()
				reported := append([]time.Time(nil), lostAt...)
				mu.Unlock()
				if len(reported) != 1 || !reported[0].Equal(cancelledAt) {
					t.Errorf("EventLost at %v; want once, at start+%v when fn's context was cancelled", reported, cancelledAt.Sub(start))
				}
				if latest := until.Add(-guard); cancelledAt.After(latest) {
					t.Errorf("fn's context cancelled at start+%v; want by start+%v, a loss guard (%v) before Until start+%v",
						cancelledAt.Sub(start), latest.Sub(start), guard, until.Sub(start))
				}
				if expiry := start.Add(ttl); !cancelledAt.Before(expiry) {
					t.Errorf("fn's context cancelled at start+%v; want before the keys can expire at start+%v", cancelledAt.Sub(start), ttl)
				}
				for _, f := range fs {
					f.inject(healthy, 0)
				}
				ctx, cancel := context.WithTimeout(context.Background(), ttl)
				defer cancel()
				l, err := m.Lock(ctx, "paused", WithRetry(0, FixedBackoff(20*time.Millisecond)))
				if err != nil {
					t.Fatalf("Lock once the nodes answer again = %v; want the lock within a TTL", err)
				}
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("Unlock = %v", err)
				}
			})
		})
	}
}
