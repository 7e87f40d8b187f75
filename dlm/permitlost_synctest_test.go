//go:build go1.25

// When a semaphore permit that nobody extends is reported lost, on
// testing/synctest's fake clock, over memlock's in-memory nodes, which run
// the semaphore's scripts as Redis does. synctest_test.go explains the build
// constraint; its go:debug line covers this test binary.

package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// TestPermitLostBeforeUntil is the timing of dlmtest's PermitExpiry on
// virtual time: a permit taken with a TTL and never extended reports Lost
// before its Until, and its Until is within the TTL of the start; once the
// TTL has passed, Extend fails with ErrLockLost, another holder takes the
// permit, and the first holder's Unlock says it was lost.
func TestPermitLostBeforeUntil(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{100 * time.Millisecond, time.Second, 2 * time.Second, time.Minute} {
		t.Run(fmt.Sprint(ttl), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, err := memlock.New()
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				ctx := context.Background()
				s, err := m.Semaphore("pool", 1)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				p, err := s.TryAcquire(ctx, dlm.WithTTL(ttl))
				if err != nil {
					t.Fatalf("TryAcquire = %v", err)
				}
				if until := p.Until(); !until.After(start) || until.After(start.Add(ttl)) {
					t.Errorf("Until = start+%v; want within the TTL %v", until.Sub(start), ttl)
				}
				<-p.Lost()
				if lost := time.Since(start); !time.Now().Before(p.Until()) {
					t.Errorf("Lost closed at start+%v; want before Until start+%v", lost, p.Until().Sub(start))
				}
				time.Sleep(time.Until(start.Add(ttl)) + time.Millisecond)
				if err := p.Extend(ctx, ttl); !errors.Is(err, dlm.ErrLockLost) {
					t.Errorf("Extend of a permit after its end = %v; want ErrLockLost", err)
				}
				other, err := s.TryAcquire(ctx)
				if err != nil {
					t.Fatalf("TryAcquire after the TTL = %v; want the permit", err)
				}
				if err := p.Unlock(ctx); !errors.Is(err, dlm.ErrLockLost) {
					t.Errorf("Unlock of a permit after its end = %v; want ErrLockLost", err)
				}
				if err := other.Unlock(ctx); err != nil {
					t.Errorf("Unlock = %v", err)
				}
			})
		})
	}
}
