//go:build go1.25

// Admission of auto-extended locks (admission.go) on testing/synctest's
// fake clock, with nodes that, as Redis does, run one request at a time
// and take a known time for each lock of a batch of extensions.
// synctest_test.go explains the build constraint.

package dlm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// serialNode runs one request at a time, as a Redis server does, and takes
// perLock (in ns, changeable at any time) for each lock of a batch of
// extensions before the fake node runs it. Its queue is a channel, on
// which a synctest bubble can wait.
type serialNode struct {
	*fakeNode
	turn    chan struct{}
	perLock atomic.Int64
}

func newSerialNodes(fs []*fakeNode, perLock time.Duration) ([]*serialNode, []driver.Node) {
	ss := make([]*serialNode, len(fs))
	ns := make([]driver.Node, len(fs))
	for i, f := range fs {
		ss[i] = &serialNode{fakeNode: f, turn: make(chan struct{}, 1)}
		ss[i].perLock.Store(int64(perLock))
		ns[i] = ss[i]
	}
	return ss, ns
}

func (s *serialNode) Eval(ctx context.Context, sc *driver.Script, keys, args []string) (any, error) {
	if sc.Hash != script.ExtendBatch.Hash {
		return s.fakeNode.Eval(ctx, sc, keys, args)
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("fake %s: %w", s.addr, ctx.Err())
	}
	defer func() { <-s.turn }()
	if err := s.wait(ctx, time.Duration(s.perLock.Load())*time.Duration(len(keys))); err != nil {
		return nil, err
	}
	return s.fakeNode.Eval(ctx, sc, keys, args)
}

// slowDown sets the time each node takes per lock of a batch.
func slowDown(ss []*serialNode, perLock time.Duration) {
	for _, s := range ss {
		s.perLock.Store(int64(perLock))
	}
}

// rampLocks asks for n auto-extended locks, step at a time every pause, as
// a service taking more and more work does, and returns the locks
// admitted in the order they were, and how many calls were refused with
// ErrOverloaded. Any other error fails t.
func rampLocks(t *testing.T, m *Manager, n, step int, pause time.Duration) (admitted []*Lock, refused int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if i > 0 && i%step == 0 {
			time.Sleep(pause)
		}
		l, err := m.TryLock(context.Background(), fmt.Sprintf("k%d", i), WithAutoExtend(AutoExtend{}))
		switch {
		case errors.Is(err, ErrOverloaded):
			refused++
		case err != nil:
			t.Fatalf("TryLock(k%d) = %v; want a lock, or ErrOverloaded", i, err)
		default:
			admitted = append(admitted, l)
		}
	}
	return admitted, refused
}

// lostOf returns the indices of the locks whose Lost is closed.
func lostOf(locks []*Lock) []int {
	var out []int
	for i, l := range locks {
		if isClosed(l.Lost()) {
			out = append(out, i)
		}
	}
	return out
}

// TestAdmissionKeepsAdmittedLocks checks the admission invariant: asked
// for more auto-extended locks than its nodes can renew, a Manager admits
// what it can keep and refuses the rest with ErrOverloaded, before it
// sends anything for them; no admitted lock is lost over many TTLs. Each
// node takes 1ms per lock of a batch, one batch at a time: 1,000 renewals
// a second, against 1.5 a second that each lock of TTL 1s needs.
func TestAdmissionKeepsAdmittedLocks(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		_, ns := newSerialNodes(fs, time.Millisecond)
		m, err := New(ns, WithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		const asked = 1000
		locks, refused := rampLocks(t, m, asked, 10, 50*time.Millisecond)
		time.Sleep(10 * time.Second)
		lost := lostOf(locks)
		t.Logf("asked %d: admitted %d, refused %d, lost %d", asked, len(locks), refused, len(lost))
		if len(lost) > 0 {
			t.Errorf("%d of the %d admitted locks lost; want none: an admitted lock is kept while the nodes answer", len(lost), len(locks))
		}
		if refused == 0 {
			t.Errorf("no call refused with ErrOverloaded; want those the nodes cannot renew refused")
		}
		if capacity := 1000 / 1.5; float64(len(locks)) > capacity {
			t.Errorf("%d locks admitted; want no more than the %.0f the nodes can renew", len(locks), capacity)
		}
		if got, want := countAll(fs, "acquire"), len(locks)*len(fs); got != want {
			t.Errorf("%d acquire requests; want %d, of the admitted locks only: a refused call sends nothing", got, want)
		}
	})
}

// TestOverloadLetsNewestGo checks what a Manager does when the nodes slow
// down after it admitted its locks, below what it needs to renew them
// all: it lets go of the newest, with an error wrapping ErrOverloaded and
// ErrLockLost, and keeps the others — never all together.
func TestOverloadLetsNewestGo(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		ss, ns := newSerialNodes(fs, time.Millisecond)
		hook := &recordingHook{}
		m, err := New(ns, WithTTL(time.Second), WithHook(hook))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		// Batches of 4 locks: 10ms on a node slowed down, 80ms for the
		// batches in flight to it, well within the margin of their locks.
		m.extender.entries = 4
		locks, refused := rampLocks(t, m, 300, 10, 50*time.Millisecond)
		if refused > 0 || len(lostOf(locks)) > 0 {
			t.Fatalf("before the slow-down: %d refused, %d lost; want all 300 admitted and kept", refused, len(lostOf(locks)))
		}
		time.Sleep(2 * time.Second)
		// 2.5ms a lock: 400 renewals a second, against 450 owed.
		slowDown(ss, 2500*time.Microsecond)
		time.Sleep(10 * time.Second)
		lost := lostOf(locks)
		kept := len(locks) - len(lost)
		t.Logf("after the slow-down: %d of %d kept, %d lost", kept, len(locks), len(lost))
		if kept == 0 {
			t.Fatalf("every lock lost; want the newest let go and the others kept")
		}
		if len(lost) == 0 {
			t.Fatalf("no lock let go; the nodes cannot renew them all")
		}
		if first := lost[0]; first != len(locks)-len(lost) {
			t.Errorf("lost locks %v; want the newest %d, from index %d on", lost, len(lost), len(locks)-len(lost))
		}
		for _, e := range hook.find(EventLost) {
			if !errors.Is(e.Err, ErrOverloaded) || !errors.Is(e.Err, ErrLockLost) {
				t.Errorf("lock %s lost with %v; want an error wrapping ErrOverloaded and ErrLockLost", e.Key, e.Err)
				break
			}
		}
		// The kept ones stay kept.
		time.Sleep(10 * time.Second)
		if again := lostOf(locks); len(again) != len(lost) {
			t.Errorf("%d lost 10s later, %d before; want the kept locks kept", len(again), len(lost))
		}
	})
}

// TestOwedFollowsLocks checks that what the extender owes follows the
// auto-extended locks it keeps: each adds its renewal rate, and gives it
// back once unlocked, also across the compaction of the admission order.
// On the fake clock: no request of the fake nodes outlasts its node
// timeout however busy the machine.
func TestOwedFollowsLocks(t *testing.T) {
	t.Parallel()
	inBubble(t, testOwedFollowsLocks)
}

func testOwedFollowsLocks(t *testing.T) {
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
	inBubble(t, testAdmitsAfterOutage)
}

func testAdmitsAfterOutage(t *testing.T) {
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

// TestAdmissionLatencyIsNoLoad checks that the time a batch spends on the
// way to a node and back is not taken for the node's load: nodes 30ms
// away, each answering at once, have a batch of extensions in flight all
// the time once rounds come every gathering window, yet renew thousands
// of locks a second. Every lock asked is admitted and kept.
func TestAdmissionLatencyIsNoLoad(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		for _, f := range fs {
			f.inject(healthy, 30*time.Millisecond)
		}
		m := newManager(t, fs, WithTTL(10*time.Second))
		const asked = 2000
		locks, refused := rampLocks(t, m, asked, 50, 50*time.Millisecond)
		time.Sleep(30 * time.Second)
		lost := lostOf(locks)
		t.Logf("asked %d: admitted %d, refused %d, lost %d", asked, len(locks), refused, len(lost))
		if refused > 0 || len(lost) > 0 {
			t.Errorf("%d refused with ErrOverloaded, %d of the %d admitted lost; want every lock admitted and kept: the nodes are far, not busy", refused, len(lost), len(locks))
		}
	})
}
