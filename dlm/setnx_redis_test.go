package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// The acquire by SET NX GET (driver.Setter) on real redis-servers, through
// internal/resp's node, which implements it.

// TestPlainAcquireMutualExclusion has 16 goroutines take turns on one key,
// each Lock through a manager of its own made for it, which has locked
// another key once, so that every first attempt takes the key by SET NX (a
// manager sends the script only to nodes that have not run it yet and for
// a key it saw contended), against the grants of others made either way:
// there is never more than one holder.
func TestPlainAcquireMutualExclusion(t *testing.T) {
	t.Parallel()
	_, nodes := startNodes(t, 3)
	const workers, rounds = 16, 6
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var holders, grants atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				if err := func() error {
					m, err := dlm.New(nodes, dlm.WithRetry(0, dlm.ExponentialBackoff(time.Millisecond, 20*time.Millisecond)))
					if err != nil {
						return err
					}
					defer m.Close()
					if err := lockUnlock(ctx, m, "warm-up"); err != nil {
						return err
					}
					l, err := m.Lock(ctx, "mutex")
					if err != nil {
						return fmt.Errorf("lock: %w", err)
					}
					if h := holders.Add(1); h != 1 {
						errs <- fmt.Errorf("%d holders at once", h)
					}
					grants.Add(1)
					time.Sleep(200 * time.Microsecond)
					holders.Add(-1)
					if time.Now().After(l.Until()) {
						errs <- errors.New("held past its validity; the test's timing is too tight")
					}
					return l.Unlock(ctx)
				}(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := grants.Load(); got != workers*rounds {
		t.Errorf("%d grants; want %d", got, workers*rounds)
	}
}

// TestPlainAcquireReleaseClearsIntent checks the writer's intent left by a
// writer that stopped waiting: a writer that takes the free key by SET NX
// leaves it in place (readers are kept out by the lock meanwhile), and its
// release deletes it, so readers get in at once afterwards instead of after
// the intent's TTL.
func TestPlainAcquireReleaseClearsIntent(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	ctx := context.Background()
	for _, s := range srvs {
		if _, err := s.Do("SET", "redlock:{doc}:wait", "1", "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	m, err := dlm.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := lockUnlock(ctx, m, "warm-up"); err != nil {
		t.Fatal(err)
	}
	w, err := m.Lock(ctx, "doc")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	for i, s := range srvs {
		if v, err := s.Do("EXISTS", "redlock:{doc}:wait"); v != int64(1) || err != nil {
			t.Errorf("node %d: EXISTS of the intent while the writer holds = %v, %v; want 1 (taken by SET NX, which leaves it)", i, v, err)
		}
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	for i, s := range srvs {
		if v, err := s.Do("EXISTS", "redlock:{doc}:wait"); v != int64(0) || err != nil {
			t.Errorf("node %d: EXISTS of the intent after the release = %v, %v; want 0", i, v, err)
		}
	}
	r, err := m.TryRLock(ctx, "doc")
	if err != nil {
		t.Fatalf("TryRLock after the writer left = %v; want a grant", err)
	}
	r.Unlock(ctx)
}

// lockUnlock locks key and unlocks it, which waits for every node's reply:
// each node that answered has then run the acquire script, and m sends it
// SET NX from then on.
func lockUnlock(ctx context.Context, m *dlm.Manager, key string) error {
	l, err := m.Lock(ctx, key)
	if err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	return l.Unlock(ctx)
}
