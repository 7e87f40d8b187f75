//go:build go1.25

// The extender under load, on testing/synctest's fake clock (see
// synctest_test.go for the build constraint and its go:debug line): a hook
// that keeps the extender's goroutine busy stands for a process that does
// not get the CPU to start its extensions on time.

package dlm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// stallingHook records every event, and stalls the goroutine that sends the
// first EventRenewal for stall, as a process short of CPU would stall.
type stallingHook struct {
	recordingHook
	once  sync.Once
	stall time.Duration
}

func (h *stallingHook) OnEvent(ctx context.Context, e *Event) {
	h.recordingHook.OnEvent(ctx, e)
	if e.Kind == EventRenewal {
		h.once.Do(func() { time.Sleep(h.stall) })
	}
}

// TestRenewalBehindReported checks that extensions that start late are
// reported — an EventRenewal wrapping ErrRenewalBehind, with the lag, and a
// Warn log line — before any lock is lost, and that the locks are still
// extended: the report comes while half the margin is left.
func TestRenewalBehindReported(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		hook := &stallingHook{stall: 280 * time.Millisecond}
		logger, logs := newLogger()
		m := newManager(t, fs, WithTTL(time.Second), WithHook(hook), WithLogger(logger))
		m.extender.lockstep = true
		a, err := m.TryLock(context.Background(), "a", WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		// a's round goes at 651ms (8ms early, gathering a round) and
		// stalls the extender to 931ms; b falls due meanwhile, at 759ms,
		// and starts 172ms late: more than half of the 280ms its schedule
		// left it before its loss guard (1039ms).
		time.Sleep(100 * time.Millisecond)
		b, err := m.TryLock(context.Background(), "b", WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		var behind *Event
		for _, e := range hook.find(EventRenewal) {
			if errors.Is(e.Err, ErrRenewalBehind) {
				behind = &e
				break
			}
		}
		switch {
		case behind == nil:
			t.Fatalf("no EventRenewal wrapping ErrRenewalBehind; events %v", hook.kinds())
		case behind.Duration < 160*time.Millisecond || behind.For != 1:
			t.Errorf("the late round's event: lag %v, %d locks; want about 172ms, 1 lock", behind.Duration, behind.For)
		}
		if lost := hook.find(EventLost); len(lost) > 0 {
			t.Errorf("%d locks lost; want the late extension reported, and done in time", len(lost))
		}
		for k, l := range map[string]*Lock{"a": a, "b": b} {
			if isClosed(l.Lost()) {
				t.Errorf("lock %q lost; want it kept", k)
			}
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "event=renewal") {
			t.Errorf("no renewal logged at Warn; log:\n%s", logs)
		}
	})
}

// TestRoundNearestDeadlineFirst checks that the extensions a round takes
// are batched, and sent, nearest to the end of their validity first: with
// batches of two, the two nearest go in the first batch, whichever fell
// due first.
func TestRoundNearestDeadlineFirst(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		hook := &stallingHook{stall: 150 * time.Millisecond}
		m := newManager(t, fs, WithTTL(time.Second), WithHook(hook))
		m.extender.lockstep = true
		m.extender.entries = 2
		rec := &batchRecorder{}
		rec.on(fs[0], nil)
		// z stalls the extender with the first round, at 651ms.
		if _, err := m.TryLock(context.Background(), "z", WithAutoExtend(AutoExtend{})); err != nil {
			t.Fatal(err)
		}
		// During the stall, to 801ms, c falls due first (at 762ms) but
		// ends last (its loss guard at 1889ms, with a TTL of 2s); a and b
		// fall due later (800ms) and end sooner (949ms).
		time.Sleep(10 * time.Millisecond)
		if _, err := m.TryLock(context.Background(), "c", WithTTL(2*time.Second), WithAutoExtend(AutoExtend{Remaining: 0.62})); err != nil {
			t.Fatal(err)
		}
		if _, err := m.TryLock(context.Background(), "a", WithAutoExtend(AutoExtend{Remaining: 0.2})); err != nil {
			t.Fatal(err)
		}
		if _, err := m.TryLock(context.Background(), "b", WithAutoExtend(AutoExtend{Remaining: 0.2})); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		// The round after the stall holds a, b and c.
		var round [][]string
		rec.mu.Lock()
		for _, b := range rec.batches[1:] {
			round = append(round, b)
			if len(round) == 2 {
				break
			}
		}
		rec.mu.Unlock()
		// The batches run on workers of their own: the nodes may see
		// them in either order, but they are cut in deadline order.
		slices.SortFunc(round, func(x, y []string) int { return len(y) - len(x) })
		if len(round) != 2 || !slices.Contains(round[0], rkey("a")) || !slices.Contains(round[0], rkey("b")) || !slices.Equal(round[1], []string{rkey("c")}) {
			t.Errorf("the round after the stall sent batches %q; want a and b together, c alone", round)
		}
	})
}

// TestRenewalBehindWhenNodesStall checks that a manager whose extension
// batches the nodes do not answer in time reports it (an EventRenewal
// wrapping ErrRenewalBehind, logged at Warn) before the lock they carry is
// lost, though every round started on time: the overload that costs locks
// can be the nodes', not the process's.
func TestRenewalBehindWhenNodesStall(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		hook := &recordingHook{}
		logger, logs := newLogger()
		m := newManager(t, fs, WithTTL(time.Second), WithNodeTimeout(200*time.Millisecond), WithHook(hook), WithLogger(logger))
		for _, f := range fs[:3] {
			f.injectFor(holding(rkey("a"), hang, 0))
		}
		locks := lockAll(t, m, []string{"a"})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if !isClosed(locks["a"].Lost()) {
			t.Fatal("lock a, whose batches hang on 3 of 5 nodes, is not lost; the test wants it lost")
		}
		behind, lost := -1, -1
		hook.mu.Lock()
		for i, e := range hook.events {
			switch {
			case behind < 0 && e.Kind == EventRenewal && errors.Is(e.Err, ErrRenewalBehind):
				behind = i
			case lost < 0 && e.Kind == EventLost:
				lost = i
			}
		}
		hook.mu.Unlock()
		if behind < 0 || behind > lost {
			t.Errorf("ErrRenewalBehind reported at event %d, the loss at %d; want it reported before the loss; events %v", behind, lost, hook.kinds())
		}
		if !strings.Contains(logs.String(), "auto-extension falling behind") {
			t.Errorf("the nodes' stall not logged; log:\n%s", logs)
		}
	})
}
