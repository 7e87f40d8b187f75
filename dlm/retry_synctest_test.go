//go:build go1.25

// WithWaitTimeout on testing/synctest's fake clock, over fake nodes.
// synctest_test.go explains the build constraint and the go:debug line.

package dlm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestWaitTimeoutBoundsTheWaitAlone checks WithWaitTimeout on each call
// that waits: behind a holder it gives up at the bound (not before, and no
// later than a node timeout after), with context.DeadlineExceeded and
// ErrNotObtained, without running Do's function; on a free lock the
// function runs ten times the bound and the TTL with the lock held on
// every node and its context live, and the lock is released after.
func TestWaitTimeoutBoundsTheWaitAlone(t *testing.T) {
	t.Parallel()
	const (
		ttl   = 100 * time.Millisecond
		bound = 300 * time.Millisecond
		nt    = 10 * time.Millisecond
	)
	calls := []struct {
		name string
		run  func(ctx context.Context, m *Manager, fn func(ctx context.Context) error) error
	}{
		{"Do", func(ctx context.Context, m *Manager, fn func(ctx context.Context) error) error {
			return m.Do(ctx, "job", fn, WithWaitTimeout(bound))
		}},
		{"Do, manager's default", func(ctx context.Context, m *Manager, fn func(ctx context.Context) error) error {
			return m.Do(ctx, "job", fn)
		}},
		{"Do, retry budget", func(ctx context.Context, m *Manager, fn func(ctx context.Context) error) error {
			return m.Do(ctx, "job", fn, WithWaitTimeout(bound), WithRetry(1000, nil))
		}},
		{"DoAll", func(ctx context.Context, m *Manager, fn func(ctx context.Context) error) error {
			return m.DoAll(ctx, []string{"job"}, fn, WithWaitTimeout(bound))
		}},
		{"Lock, auto-extended", func(ctx context.Context, m *Manager, fn func(ctx context.Context) error) error {
			l, err := m.Lock(ctx, "job", WithWaitTimeout(bound), WithAutoExtend(AutoExtend{}))
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancelCause(context.WithValue(ctx, lockKey{}, l))
			defer cancel(nil)
			go func() {
				<-l.Lost()
				cancel(ErrLockLost)
			}()
			return errors.Join(fn(ctx), l.Unlock(context.Background()))
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(3)
				m := newManager(t, fs, WithTTL(ttl), WithNodeTimeout(nt), WithWaitTimeout(bound))
				// A holder's lock, kept extended: the wait runs out.
				other := newManager(t, fs, WithTTL(ttl), WithNodeTimeout(nt))
				held, err := other.Lock(context.Background(), "job", WithAutoExtend(AutoExtend{}))
				if err != nil {
					t.Fatalf("holder's Lock = %v", err)
				}
				ran := false
				var gave error
				// The test's own bound, far past the option's, ends a
				// wait that ignores it.
				ctx, cancel := context.WithTimeout(context.Background(), 10*bound)
				took := elapsed(func() {
					gave = c.run(ctx, m, func(context.Context) error { ran = true; return nil })
				})
				cancel()
				if ran || !errors.Is(gave, context.DeadlineExceeded) || !errors.Is(gave, ErrNotObtained) {
					t.Errorf("%s behind a holder = %v (function ran: %v); want context.DeadlineExceeded and ErrNotObtained, the function not run", c.name, gave, ran)
				}
				if took < bound || took > bound+nt {
					t.Errorf("%s behind a holder gave up after %v; want %v to %v", c.name, took, bound, bound+nt)
				}
				if err := held.Unlock(context.Background()); err != nil {
					t.Fatalf("holder's Unlock = %v", err)
				}
				// Free: the function runs far past the bound.
				err = c.run(context.Background(), m, func(ctx context.Context) error {
					secret := LockFromContext(ctx).secret
					for range 100 {
						time.Sleep(bound / 10)
						if ctx.Err() != nil || !heldBy(fs, rkey("job"), secret) {
							return fmt.Errorf("lock not held at %v: ctx %v, nodes %q", time.Now(), context.Cause(ctx), holders(fs, rkey("job")))
						}
					}
					return nil
				})
				if err != nil {
					t.Errorf("%s running 10× the wait bound = %v; want nil", c.name, err)
				}
				if !noneHold(fs, rkey("job")) {
					t.Errorf("after %s, nodes hold %q; want nothing", c.name, holders(fs, rkey("job")))
				}
			})
		})
	}
}
