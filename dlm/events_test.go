package dlm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingHook keeps the events it observes.
type recordingHook struct {
	mu     sync.Mutex
	events []Event
}

func (h *recordingHook) OnEvent(_ context.Context, e *Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, *e)
}

func (h *recordingHook) kinds() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		s := e.Kind.String()
		if e.Kind == EventNodeError {
			s += "@" + e.Node
		}
		out = append(out, s)
	}
	return out
}

func TestHookSeesEvents(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	h := &recordingHook{}
	m := newManager(t, fs, WithHook(h))
	ctx := context.Background()
	fs[2].inject(refuse, 0)

	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx, "k"); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("second TryLock = %v; want ErrNotObtained", err)
	}
	fs[0].set(rkey("k"), "someone-else", time.Minute)
	fs[1].set(rkey("k"), "someone-else", time.Minute)
	if err := l.Extend(ctx, time.Second); !errors.Is(err, ErrLockLost) {
		t.Fatalf("Extend after the keys changed hands = %v; want ErrLockLost", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, ErrLockLost) {
		t.Fatalf("Unlock of a lost lock = %v; want ErrLockLost", err)
	}

	// Early decisions may or may not count fake-2's refusal, so node
	// errors are compared apart, where they are certain: Unlock waits for
	// every node.
	var got []string
	for _, k := range h.kinds() {
		if !strings.HasPrefix(k, "node_error") {
			got = append(got, k)
		}
	}
	want := []string{
		"attempt", "obtained", // TryLock
		"extended",                // Extend
		"attempt", "not_obtained", // second TryLock
		"extend_failed", "lost", // Extend after the keys changed hands
		"released", // Unlock
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %v\nwant       %v", got, want)
	}
	all := h.kinds()
	if len(all) < 2 || all[len(all)-2] != "node_error@fake-2" {
		t.Errorf("events = %v; want fake-2's refusal of the release just before it", all)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.Key != "k" {
			t.Errorf("%v event has key %q; want k", e.Kind, e.Key)
		}
		if e.Err != nil && strings.Contains(e.Err.Error(), l.secret) {
			t.Errorf("%v event's error contains the secret", e.Kind)
		}
		if e.Kind == EventObtained && e.Attempts != 1 {
			t.Errorf("obtained event = %+v; want 1 attempt", e)
		}
	}
}

// TestNoEventsWithoutListeners checks that with no hook and the default
// logger no event is wanted, so none is built.
func TestNoEventsWithoutListeners(t *testing.T) {
	t.Parallel()
	fs := newFakes(1)
	m := newManager(t, fs)
	ctx := context.Background()
	cfg := m.cfg
	for k := EventAttempt; k <= EventWaiting; k++ {
		if cfg.wants(ctx, k, errors.New("x")) {
			t.Errorf("wants(%v) = true with no hook and the default logger", k)
		}
	}
}

func TestEventKindString(t *testing.T) {
	t.Parallel()
	for k, want := range map[EventKind]string{
		EventAttempt: "attempt", EventNodeError: "node_error", EventDone: "done", EventRenewal: "renewal", EventReleaseRetry: "release_retry", EventWaiting: "waiting", 0: "unknown", EventWaiting + 1: "unknown",
	} {
		if got := k.String(); got != want {
			t.Errorf("EventKind(%d).String() = %q; want %q", int(k), got, want)
		}
	}
}

// lastEvent returns the latest event the hook saw, and how many it saw.
func (h *recordingHook) lastEvent() (Event, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) == 0 {
		return Event{}, 0
	}
	return h.events[len(h.events)-1], len(h.events)
}

// find returns the events of kind k.
func (h *recordingHook) find(k EventKind) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, e := range h.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// nodesOf returns the nodes named by a vote event's NodeErrors.
func nodesOf(e Event) []string {
	var out []string
	for _, nerr := range e.NodeErrors {
		out = append(out, nerr.Node)
	}
	return out
}

// TestVoteEventsCarryNodeErrors checks that the events reporting a vote
// carry the node failures of that vote, the same ones sent just before as
// EventNodeError, and none when no node failed.
func TestVoteEventsCarryNodeErrors(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	h := &recordingHook{}
	m := newManager(t, fs, WithHook(h))
	ctx := context.Background()

	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	for _, e := range h.find(EventAttempt) {
		if e.NodeErrors != nil {
			t.Errorf("attempt on healthy nodes has NodeErrors %v; want nil", nodesOf(e))
		}
	}
	if e := h.find(EventExtended); len(e) != 1 || e[0].NodeErrors != nil {
		t.Errorf("extended events = %+v; want one, without NodeErrors", e)
	}

	// Unlock waits for every node, so fake-2's refusal is certain to count.
	fs[2].inject(refuse, 0)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rel, n := h.lastEvent()
	if rel.Kind != EventReleased || fmt.Sprint(nodesOf(rel)) != "[fake-2]" {
		t.Fatalf("last event = %v with node errors %v; want released with [fake-2]", rel.Kind, nodesOf(rel))
	}
	if rel.Failed != 1 || !strings.Contains(rel.NodeErrors[0].Error(), "connection refused") {
		t.Errorf("released event = %+v; want 1 failed, fake-2's refusal", rel)
	}
	h.mu.Lock()
	before := h.events[n-2]
	h.mu.Unlock()
	if before.Kind != EventNodeError || before.Node != "fake-2" || before.Err != error(rel.NodeErrors[0]) {
		t.Errorf("event before released = %+v; want fake-2's node_error with the same error", before)
	}

	// Two of three refusing: every attempt counts both failures, in node
	// order, whichever answered first.
	fs[1].inject(refuse, 0)
	if _, err := m.TryLock(ctx, "k2"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("TryLock with 2 of 3 nodes refusing = %v; want ErrUnavailable", err)
	}
	att := h.find(EventAttempt)
	last := att[len(att)-1]
	if got := fmt.Sprint(nodesOf(last)); got != "[fake-1 fake-2]" || last.Failed != 2 {
		t.Errorf("failed attempt's NodeErrors = %s, Failed %d; want [fake-1 fake-2], 2", got, last.Failed)
	}
}

// TestDoEvent checks that Do sends one EventDone when it returns, last,
// timing the whole call and carrying its error, and none for invalid
// arguments.
func TestDoEvent(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	ctx := context.Background()
	done := func(t *testing.T, h *recordingHook) Event {
		t.Helper()
		e, _ := h.lastEvent()
		if e.Kind != EventDone {
			t.Fatalf("last event = %v (all: %v); want done", e.Kind, h.kinds())
		}
		if got := len(h.find(EventDone)); got != 1 {
			t.Errorf("%d done events; want 1", got)
		}
		if e.Op != "do" {
			t.Errorf("done event's Op = %q; want do", e.Op)
		}
		return e
	}

	t.Run("fn error", func(t *testing.T) {
		h := &recordingHook{}
		m := newManager(t, newFakes(3), WithHook(h))
		const work = 20 * time.Millisecond
		before := time.Now()
		err := m.Do(ctx, "job", func(context.Context) error {
			time.Sleep(work)
			return errWork
		})
		elapsed := time.Since(before)
		if err != errWork {
			t.Fatalf("Do = %v; want %v", err, errWork)
		}
		e := done(t, h)
		if e.Key != "job" || e.Err != errWork {
			t.Errorf("done event = %+v; want key job, fn's error", e)
		}
		if e.Start.Before(before) || e.Duration < work || e.Duration > elapsed {
			t.Errorf("done event starts %v after the call, lasts %v; want from the call, at least %v and at most %v",
				e.Start.Sub(before), e.Duration, work, elapsed)
		}
		if got := fmt.Sprint(h.kinds()); got != "[waiting attempt obtained released done]" {
			t.Errorf("events = %s; want [waiting attempt obtained released done]", got)
		}
	})

	t.Run("fn panicked", func(t *testing.T) {
		h := &recordingHook{}
		m := newManager(t, newFakes(3), WithHook(h))
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("recovered %v from Do; want fn's panic", r)
				}
			}()
			m.Do(ctx, "job", func(context.Context) error { panic("boom") })
		}()
		if e := done(t, h); !errors.Is(e.Err, errFnAborted) {
			t.Errorf("done event's Err = %v; want errFnAborted", e.Err)
		}
		if got := fmt.Sprint(h.kinds()); got != "[waiting attempt obtained released done]" {
			t.Errorf("events = %s; want [waiting attempt obtained released done]", got)
		}
	})

	t.Run("DoAll", func(t *testing.T) {
		h := &recordingHook{}
		m := newManager(t, newFakes(3))
		if err := m.DoAll(ctx, []string{"b", "a"}, func(context.Context) error { return nil }, WithHook(h)); err != nil {
			t.Fatal(err)
		}
		if e := done(t, h); e.Key != "a,b" || e.Err != nil {
			t.Errorf("done event = %+v; want key a,b and no error", e)
		}
	})

	t.Run("not obtained", func(t *testing.T) {
		fs := newFakes(3)
		setUp(fs, "job", "HHH")
		h := &recordingHook{}
		m := newManager(t, fs, WithHook(h), WithRetry(1, nil))
		err := m.Do(ctx, "job", func(context.Context) error {
			t.Error("Do ran fn without the lock")
			return nil
		})
		if !errors.Is(err, ErrNotObtained) {
			t.Fatalf("Do on a held lock = %v; want ErrNotObtained", err)
		}
		if e := done(t, h); e.Err != err || e.Token != 0 {
			t.Errorf("done event = %+v; want Do's error %v", e, err)
		}
		if got := fmt.Sprint(h.kinds()); got != "[waiting attempt not_obtained done]" {
			t.Errorf("events = %s; want [waiting attempt not_obtained done]", got)
		}
	})

	t.Run("lost", func(t *testing.T) {
		fs := newFakes(3)
		h := &recordingHook{}
		m := newManager(t, fs, WithHook(h), WithTTL(200*time.Millisecond))
		err := m.Do(ctx, "job", func(ctx context.Context) error {
			for _, f := range fs[:2] {
				f.set(rkey("job"), "someone-else", time.Minute)
			}
			<-ctx.Done() // the next extension finds the lock gone
			return nil
		})
		if !errors.Is(err, ErrLockLost) {
			t.Fatalf("Do whose lock was taken over = %v; want ErrLockLost", err)
		}
		if e := done(t, h); !errors.Is(e.Err, ErrLockLost) {
			t.Errorf("done event's Err = %v; want ErrLockLost", e.Err)
		}
		if len(h.find(EventLost)) != 1 {
			t.Errorf("events = %v; want one lost before done", h.kinds())
		}
	})

	t.Run("invalid", func(t *testing.T) {
		h := &recordingHook{}
		m := newManager(t, newFakes(3), WithHook(h))
		fn := func(context.Context) error { return nil }
		_ = m.Do(ctx, "job", nil)
		_ = m.Do(ctx, "", fn)
		_ = m.Do(ctx, "job", fn, WithTTL(-time.Second))
		_ = m.DoAll(ctx, nil, fn)
		if _, n := h.lastEvent(); n != 0 {
			t.Errorf("invalid Do calls sent events %v; want none", h.kinds())
		}
	})

	t.Run("per-call hook only", func(t *testing.T) {
		// A hook given to the call alone still sees done when the lock
		// was not obtained, which Do reports without a Lock.
		fs := newFakes(3)
		setUp(fs, "job", "HHH")
		m := newManager(t, fs, WithRetry(1, nil))
		h := &recordingHook{}
		_ = m.Do(ctx, "job", func(context.Context) error { return nil }, WithHook(h))
		done(t, h)
	})
}

// TestDoEventLogged checks that EventDone reaches the logger at Debug, and
// that the default logger does not want it.
func TestDoEventLogged(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	logger, buf := newLogger()
	m := newManager(t, newFakes(3), WithLogger(logger))
	if err := m.Do(context.Background(), "job", func(context.Context) error { return errWork }); err != errWork {
		t.Fatalf("Do = %v; want %v", err, errWork)
	}
	out := buf.String()
	if !strings.Contains(out, `level=DEBUG msg="dlm: do done" event=done key=job`) || !strings.Contains(out, "error=") {
		t.Errorf("log lacks the done record with its error:\n%s", out)
	}
}

// ctxHook records the kinds of the events it observes, and those that came
// with a done context or without the operation's values.
type ctxHook struct {
	mu    sync.Mutex
	kinds []EventKind
	seen  []string
}

type ctxMark struct{}

func (h *ctxHook) OnEvent(ctx context.Context, e *Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kinds = append(h.kinds, e.Kind)
	if ctx.Err() != nil || ctx.Value(ctxMark{}) == nil {
		h.seen = append(h.seen, fmt.Sprintf("%v (done: %v, values: %v)", e.Kind, ctx.Err(), ctx.Value(ctxMark{})))
	}
}

// TestHookContextNotDone checks that a hook gets the operation's context
// with its values but never done, also for an operation its context ended:
// hooks such as OpenTelemetry's drop what they record under a done context,
// and a Lock that stopped waiting is worth recording.
func TestHookContextNotDone(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	setUp(fs, "k", "HHH") // held elsewhere: Lock waits
	h := &ctxHook{}
	m := newManager(t, fs, WithHook(h), WithRetry(0, FixedBackoff(5*time.Millisecond)))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxMark{}, true))
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := m.Lock(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock whose context was cancelled = %v; want context.Canceled", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.kinds, EventNotObtained) {
		t.Errorf("events observed: %v; want the stopped wait's %v among them", h.kinds, EventNotObtained)
	}
	if len(h.seen) > 0 {
		t.Errorf("events observed with a done context or without its values: %v", h.seen)
	}
}
