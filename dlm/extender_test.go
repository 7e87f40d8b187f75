package dlm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestExtQueue checks the extender's queue against a sorted list: after
// random pushes and compactions (which drop the stopped locks), pops come
// in the order of their times, and push says when a lock comes first.
func TestExtQueue(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var q extQueue
	var want []int64
	for step := range 5000 {
		switch op := r.IntN(20); {
		case op < 12:
			a := &autoExtension{at: r.Int64N(1000)}
			slices.Sort(want)
			first := len(want) == 0 || a.at < want[0]
			if got := q.push(a); got != first && (len(want) == 0 || a.at != want[0]) {
				t.Fatalf("step %d: push(%d) first = %v; want %v (earliest so far %v)", step, a.at, got, first, want)
			}
			want = append(want, a.at)
		case op < 13:
			// Stop a third of the locks, and compact.
			for _, it := range q {
				if r.IntN(3) == 0 {
					it.a.state = autoStopped
					want = slices.Delete(want, slices.Index(want, it.a.at), slices.Index(want, it.a.at)+1)
				}
			}
			q.keep(func(it queueItem) bool { return it.a.state != autoStopped })
		case len(q) > 0:
			slices.Sort(want)
			if a := q.pop(); a.at != want[0] {
				t.Fatalf("step %d: pop = %d; want %d, the earliest", step, a.at, want[0])
			}
			want = want[1:]
		}
		if len(q) != len(want) {
			t.Fatalf("step %d: %d queued; want %d", step, len(q), len(want))
		}
		for i, it := range q {
			if it.at != it.a.at || (i > 0 && q[(i-1)/2].at > it.at) {
				t.Fatalf("step %d: item %d out of heap order", step, i)
			}
		}
	}
}

// TestQueueCompacted checks that the locks whose auto-extension stopped do
// not pile up in the extender's queue: unlocked, they are dropped once
// most of the queue is stopped.
func TestQueueCompacted(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	m := newManager(t, fs, WithTTL(time.Minute))
	ctx := context.Background()
	var locks []*Lock
	for i := range 200 {
		l, err := m.TryLock(ctx, fmt.Sprint("k", i), WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, l)
	}
	for _, l := range locks[:150] {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	x := m.extender
	x.mu.Lock()
	queued, stopped := len(x.queue), x.stopped
	x.mu.Unlock()
	if queued-stopped != 50 || queued > 2*50+compactFrom {
		t.Errorf("after 150 of 200 auto-extended locks were unlocked: %d queued, %d of them stopped; want 50 live, at most %d in all", queued, stopped, 2*50+compactFrom)
	}
}

// TestExtendRequeues checks that an Extend of an auto-extended lock queues
// it again for the validity it leaves, and that the items it leaves behind
// do not pile up: after many Extends of a few locks, each lock has one
// current item, due by its new validity, and the stale ones are counted
// and compacted away as stopped locks are.
func TestExtendRequeues(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	m := newManager(t, fs, WithTTL(time.Minute))
	ctx := context.Background()
	var locks []*Lock
	for i := range 4 {
		l, err := m.TryLock(ctx, fmt.Sprint("k", i), WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, l)
	}
	for i := range 200 {
		ttl := time.Minute
		if i%2 == 0 {
			ttl = 30 * time.Second // shorter and longer in turn
		}
		if err := locks[i%len(locks)].Extend(ctx, ttl); err != nil {
			t.Fatal(err)
		}
	}
	x := m.extender
	x.mu.Lock()
	queued, stale := len(x.queue), x.stopped
	current := map[*autoExtension]int{}
	for _, it := range x.queue {
		if it.current() {
			current[it.a]++
		}
	}
	x.mu.Unlock()
	if queued-stale != len(locks) || queued > 2*len(locks)+compactFrom {
		t.Errorf("after 200 Extends of %d auto-extended locks: %d queued, %d of them stale; want %d current, at most %d in all", len(locks), queued, stale, len(locks), 2*len(locks)+compactFrom)
	}
	for i, l := range locks {
		if current[l.auto] != 1 {
			t.Errorf("lock %d has %d current items in the queue; want 1", i, current[l.auto])
		}
		// Due when a third of the validity is left, less up to a tenth
		// of the wait for jitter.
		left := time.Until(l.Until()) - l.cfg.validity(l.cfg.ttl)/3
		x.mu.Lock()
		due := time.Duration(l.auto.at - x.clock(time.Now()))
		x.mu.Unlock()
		if due > left || due < left*9/10-time.Second {
			t.Errorf("lock %d (Until in %v): next extension due in %v; want about %v, by its last Extend", i, time.Until(l.Until()).Round(time.Millisecond), due.Round(time.Millisecond), left.Round(time.Millisecond))
		}
	}
}
