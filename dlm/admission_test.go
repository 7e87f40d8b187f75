package dlm

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// TestCostMeter checks the measure of a renewal's cost: busy time over
// the renewals of the current window and the one before, none older.
func TestCostMeter(t *testing.T) {
	t0 := time.Unix(0, 0)
	type sample struct {
		at   time.Duration
		busy time.Duration
		n    int
	}
	for _, tc := range []struct {
		name    string
		samples []sample
		want    float64
	}{
		{"none", nil, 0},
		{"one window", []sample{{0, 10 * time.Millisecond, 10}, {100 * time.Millisecond, 30 * time.Millisecond, 10}}, 0.002},
		{"two windows", []sample{{0, 10 * time.Millisecond, 10}, {meterWindow, 30 * time.Millisecond, 10}}, 0.002},
		{"older windows dropped", []sample{{0, 100 * time.Millisecond, 10}, {meterWindow, 10 * time.Millisecond, 10}, {2 * meterWindow, 10 * time.Millisecond, 10}}, 0.001},
		{"an idle gap drops both", []sample{{0, 100 * time.Millisecond, 10}, {5 * meterWindow, 10 * time.Millisecond, 10}}, 0.001},
		{"failed batches: busy, nothing renewed", []sample{{0, 10 * time.Millisecond, 10}, {time.Millisecond, 10 * time.Millisecond, 0}}, 0.002},
		{"every batch failed", []sample{{0, 10 * time.Millisecond, 0}}, math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c costMeter
			c.since = t0
			for _, s := range tc.samples {
				c.add(t0.Add(s.at), s.busy, s.n)
			}
			if got := c.cost(); got != tc.want && math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("cost = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestOwedFollowsLocks checks that what the extender owes follows the
// auto-extended locks it keeps: each adds its renewal rate, and gives it
// back once unlocked, also across the compaction of the admission order.
func TestOwedFollowsLocks(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	m := newManager(t, fs, WithTTL(3*time.Second))
	const n = 300
	locks := make([]*Lock, n)
	for i := range locks {
		l, err := m.TryLock(context.Background(), fmt.Sprintf("k%d", i), WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		locks[i] = l
	}
	x := m.extender
	rate := renewalRate(&locks[0].cfg)
	owed := func() (float64, float64, int) {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.owed, x.reserved, len(x.admitted)
	}
	if o, r, _ := owed(); math.Abs(o-n*rate) > 1e-6 || r != 0 {
		t.Fatalf("owed %v, reserved %v with %d locks; want %v, 0", o, r, n, n*rate)
	}
	for _, l := range locks {
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if o, r, kept := owed(); math.Abs(o) > 1e-6 || r != 0 || kept > n/2 {
		t.Errorf("owed %v, reserved %v, %d in the admission order after every unlock; want 0, 0, at most %d", o, r, kept, n/2)
	}
}

// TestAdmitsAfterOutage checks that a Manager whose renewals all failed
// lately, its nodes down rather than itself slow, still admits an
// auto-extended lock once the nodes answer again: an outage is no
// overload, and the acquire tells whether the nodes answer.
func TestAdmitsAfterOutage(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	m := newManager(t, fs, WithTTL(3*time.Second))
	for i := range m.nodes {
		s := m.nodes[i].sender
		s.mu.Lock()
		s.meter.add(time.Now(), 100*time.Millisecond, 0) // a batch that failed
		s.mu.Unlock()
	}
	if c := m.extender.renewalCost(); !math.IsInf(c, 1) {
		t.Fatalf("renewal cost after every batch failed = %v; want +Inf", c)
	}
	l, err := m.TryLock(context.Background(), "k", WithAutoExtend(AutoExtend{}))
	if err != nil {
		t.Fatalf("TryLock with auto-extension after an outage = %v; want the lock (an outage is no overload)", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}
