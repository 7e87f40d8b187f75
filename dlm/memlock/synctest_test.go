//go:build go1.25

// testing/synctest needs the Go 1.23 timer channels, which a go 1.22 module
// turns off by default; the go:debug line turns them on for this test binary.

//go:debug asynctimerchan=0

package memlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// TestFakeClock lets an hour-long TTL run out on synctest's fake clock: the
// lock is reported lost before its validity ends, a rival takes it, and the
// first holder's Unlock says it was lost — in no real time.
func TestFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := memlock.New(dlm.WithTTL(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ctx := context.Background()
		l, err := m.TryLock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		<-l.Lost()
		if lost := time.Since(start); lost >= time.Hour || !time.Now().Before(l.Until()) {
			t.Errorf("Lost after %v, Until %v after the start; want Lost before Until, within the hour", lost, l.Until().Sub(start))
		}
		if _, err := m.TryLock(ctx, "job"); !errors.Is(err, dlm.ErrNotObtained) {
			t.Errorf("TryLock before the TTL's end = %v; want ErrNotObtained", err)
		}
		time.Sleep(time.Until(start.Add(time.Hour)))
		rival, err := m.TryLock(ctx, "job")
		if err != nil {
			t.Fatalf("TryLock after the TTL = %v", err)
		}
		if err := l.Unlock(ctx); !errors.Is(err, dlm.ErrLockLost) {
			t.Errorf("Unlock after expiry = %v; want ErrLockLost", err)
		}
		if err := rival.Unlock(ctx); err != nil {
			t.Errorf("rival Unlock = %v", err)
		}
	})
}

// TestFakeClockDo runs Do for a day under a one-minute TTL on the fake
// clock: auto-extension keeps the lock the whole time.
func TestFakeClockDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := memlock.New(dlm.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		err = m.Do(context.Background(), "job", func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(24 * time.Hour):
			}
			if _, err := m.TryLock(ctx, "job"); !errors.Is(err, dlm.ErrNotObtained) {
				t.Errorf("TryLock after a day in Do = %v; want ErrNotObtained", err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("Do = %v", err)
		}
	})
}

// TestFakeClockFenceRestart checks that fencing counters under
// WithFenceExpiry follow the fake clock: a counter restarts from the
// bubble's clock in microseconds, after FlushAll as after its expiry, which
// an hour of fake time brings in no real time.
func TestFakeClockFenceRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memlock.NewNode("a:1")
		m, err := dlm.New([]driver.Node{n}, dlm.WithFencing(), dlm.WithFenceExpiry(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ctx := context.Background()
		grant := func(when string) uint64 {
			t.Helper()
			before := time.Now().UnixMicro()
			l, err := m.TryLock(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now().UnixMicro()
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if tok := int64(l.Token()); tok <= before || tok > after+1 {
				t.Errorf("%s: token %d; want the fake clock in µs plus one, within [%d, %d]", when, tok, before+1, after+1)
			}
			return l.Token()
		}
		first := grant("first grant")
		if next, _ := m.TryLock(ctx, "job"); next == nil || next.Token() != first+1 {
			t.Fatalf("grant after %d = %v; want token %d", first, next, first+1)
		} else {
			next.Unlock(ctx)
		}
		time.Sleep(time.Minute)
		n.FlushAll()
		flushed := grant("after FlushAll")
		if flushed <= first+1 {
			t.Errorf("token after FlushAll %d; want more than %d", flushed, first+1)
		}
		time.Sleep(time.Hour + time.Second)
		if expired := grant("after the counter expired"); expired <= flushed {
			t.Errorf("token after the counter expired %d; want more than %d", expired, flushed)
		}
	})
}

// TestFairOrder checks that memlock runs the fair mode, whose scripts it
// once refused: three waiters, each of its own manager as separate
// processes would be, obtain the lock in the order they first asked for it.
// The holder's lock expires rather than being released, so that no release
// hands the key on: the key is free, and only the head of the line may take
// it (without fairness, whichever waiter retried first would). Each waiter
// then hands the lock on to the next by its release.
func TestFairOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memlock.NewNode("a:1")
		fair := dlm.WithFairness(dlm.Fairness{})
		newManager := func(opts ...dlm.ManagerOption) *dlm.Manager {
			m, err := dlm.New([]driver.Node{n}, append(opts, fair)...)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		ctx := context.Background()
		holder := newManager(dlm.WithTTL(time.Second))
		defer holder.Close()
		if _, err := holder.TryLock(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range 3 {
			m := newManager()
			defer m.Close()
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := m.Lock(ctx, "k")
				if err != nil {
					t.Errorf("waiter %d: Lock = %v", i, err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("waiter %d: Unlock = %v", i, err)
				}
			}()
			synctest.Wait() // refused: the waiter has its place in the line
		}
		wg.Wait()
		if want := []int{0, 1, 2}; !slices.Equal(order, want) {
			t.Errorf("the waiters obtained the lock in the order %v; want %v, the order they asked in", order, want)
		}
	})
}
