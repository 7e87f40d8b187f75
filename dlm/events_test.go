package dlm

import (
	"context"
	"errors"
	"fmt"
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

func (h *recordingHook) Observe(_ context.Context, e *Event) {
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
		if e.Err != nil && strings.Contains(e.Err.Error(), l.token) {
			t.Errorf("%v event's error contains the token", e.Kind)
		}
		if e.Kind == EventObtained && e.Attempts != 1 {
			t.Errorf("obtained event = %+v; want 1 attempt", e)
		}
	}
}

// TestNoEventsWithoutListeners checks that with no hook and the default
// logger no event is wanted, so none is built.
func TestNoEventsWithoutListeners(t *testing.T) {
	fs := newFakes(1)
	m := newManager(t, fs)
	ctx := context.Background()
	cfg := m.cfg
	for k := EventAttempt; k <= EventNodeError; k++ {
		if cfg.wants(ctx, k, errors.New("x")) {
			t.Errorf("wants(%v) = true with no hook and the default logger", k)
		}
	}
}
