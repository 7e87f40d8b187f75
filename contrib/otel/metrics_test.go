package otel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestWaitingAndHold checks dlm.waiting and dlm.hold.duration on real
// servers: two Lock calls behind a holder count as two waiting calls,
// under the key WithWaitingKeys gives theirs and not under one it leaves
// off; TryLock never counts; the gauge is back to 0 once they have the
// lock; every Unlock records the hold, released, at least as long as the
// lock was held, and the Unlock of a lost lock records it as lost.
func TestWaitingAndHold(t *testing.T) {
	t.Parallel()
	r := newRigHook(t, redistest.StartServers(t, 3, redistest.WithArgs("--requirepass", password)),
		[]Option{WithWaitingKeys(func(k string) string {
			if k == "busy" {
				return k
			}
			return ""
		})})
	ctx := context.Background()
	holder, err := r.m.TryLock(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.m.TryLock(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *dlm.Lock, 3)
	for _, k := range []string{"busy", "busy", "other"} {
		go func() {
			l, err := r.m.Lock(ctx, k)
			if err != nil {
				t.Errorf("Lock(%s): %v", k, err)
			}
			got <- l
		}()
	}
	deadline := time.Now().Add(r.nodeTimeout(10 * time.Second))
	for {
		rm := r.collect(t)
		busy, all := count(t, rm, metricWaiting, attrKey.String("busy")), count(t, rm, metricWaiting)
		if busy == 2 && all == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{busy} = %d, all %d; want 2 and 3 waiting calls", metricWaiting, busy, all)
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	time.Sleep(50 * time.Millisecond)
	holder.Unlock(ctx)
	other.Unlock(ctx)
	for range 3 {
		l := <-got
		if l != nil {
			l.Unlock(ctx)
		}
	}
	held := time.Since(start)
	rm := r.collect(t)
	if n := count(t, rm, metricWaiting); n != 0 {
		t.Errorf("%s = %d once every call has its lock; want 0", metricWaiting, n)
	}
	dps := histogramOf(t, rm, metricHold, attrOutcome.String(dlm.EventReleased.String()))
	if len(dps) != 1 || dps[0].Count != 5 || dps[0].Sum < 0.05 || dps[0].Sum > 5*held.Seconds() {
		t.Errorf("%s{released} = %+v; want 5 holds, summing at least 50ms", metricHold, dps)
	}
	// A lost lock's Unlock: its hold ends lost.
	l, err := r.m.TryLock(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.servers {
		if _, err := s.Do("DEL", dlm.DefaultKeyPrefix+"{gone}"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Extend(ctx, dlm.DefaultTTL); !errors.Is(err, dlm.ErrLockLost) {
		t.Fatalf("Extend of a lock whose keys are gone = %v; want ErrLockLost", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, dlm.ErrLockLost) {
		t.Fatalf("Unlock of a lost lock = %v; want ErrLockLost", err)
	}
	if dps := histogramOf(t, r.collect(t), metricHold, attrOutcome.String(outcomeLost)); len(dps) != 1 || dps[0].Count != 1 {
		t.Errorf("%s{lost} = %+v; want the lost lock's hold", metricHold, dps)
	}
}
