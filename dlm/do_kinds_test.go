package dlm_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/dlmgo/redlock/dlm"
)

// TestEveryDoSendsDone checks that Do, DoAll, RDo and Semaphore.Do each
// send one EventDone, last, carrying the call's error, whether the lock was
// obtained or not: every kind of lock runs fn through the same Do.
func TestEveryDoSendsDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type call func(m *dlm.Manager, fn func(context.Context) error, opts ...dlm.Option) error
	sem := func(t *testing.T, m *dlm.Manager) *dlm.Semaphore {
		s, err := m.Semaphore("job", 1)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		do   call
		// hold takes, under the same manager, what makes the call wait.
		hold func(t *testing.T, m *dlm.Manager) (*dlm.Lock, error)
	}{
		{"Do",
			func(m *dlm.Manager, fn func(context.Context) error, opts ...dlm.Option) error {
				return m.Do(ctx, "job", fn, opts...)
			},
			func(t *testing.T, m *dlm.Manager) (*dlm.Lock, error) { return m.TryLock(ctx, "job") }},
		{"DoAll",
			func(m *dlm.Manager, fn func(context.Context) error, opts ...dlm.Option) error {
				return m.DoAll(ctx, []string{"job", "other"}, fn, opts...)
			},
			func(t *testing.T, m *dlm.Manager) (*dlm.Lock, error) { return m.TryLock(ctx, "other") }},
		{"RDo",
			func(m *dlm.Manager, fn func(context.Context) error, opts ...dlm.Option) error {
				return m.RDo(ctx, "job", fn, opts...)
			},
			func(t *testing.T, m *dlm.Manager) (*dlm.Lock, error) { return m.TryLock(ctx, "job") }}, // a writer
		{"Semaphore.Do",
			func(m *dlm.Manager, fn func(context.Context) error, opts ...dlm.Option) error {
				s, err := m.Semaphore("job", 1)
				if err != nil {
					return err
				}
				return s.Do(ctx, fn, opts...)
			},
			func(t *testing.T, m *dlm.Manager) (*dlm.Lock, error) { return sem(t, m).TryAcquire(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, obtained := range []bool{true, false} {
				m, err := dlm.New(asDriverNodes(memNodes(3)))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				if !obtained {
					held, err := tc.hold(t, m)
					if err != nil {
						t.Fatalf("taking what the call must wait for: %v", err)
					}
					defer held.Unlock(ctx)
				}
				h := &doneHook{}
				ran := false
				err = tc.do(m, func(context.Context) error { ran = true; return errWorkFailed },
					dlm.WithHook(h), dlm.WithRetry(1, nil))
				want := errWorkFailed
				if !obtained {
					if ran || !errors.Is(err, dlm.ErrNotObtained) {
						t.Fatalf("%s on a held lock = %v, fn ran: %v; want ErrNotObtained without fn", tc.name, err, ran)
					}
					want = err
				} else if err != errWorkFailed {
					t.Fatalf("%s = %v; want fn's error", tc.name, err)
				}
				kinds, done := h.result()
				if len(done) != 1 || kinds[len(kinds)-1] != dlm.EventDone.String() {
					t.Fatalf("obtained %v: events %v; want one done, last", obtained, kinds)
				}
				if done[0].Err != want || done[0].Op != "do" {
					t.Errorf("obtained %v: done event's Op %q, Err %v; want do, %v", obtained, done[0].Op, done[0].Err, want)
				}
			}
		})
	}
}

// errWorkFailed is what the functions of TestEveryDoSendsDone return.
var errWorkFailed = errors.New("work failed")

// doneHook records the kinds of the events it receives, and the done
// events themselves.
type doneHook struct {
	mu    sync.Mutex
	kinds []string
	done  []dlm.Event
}

func (h *doneHook) OnEvent(_ context.Context, e *dlm.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kinds = append(h.kinds, e.Kind.String())
	if e.Kind == dlm.EventDone {
		h.done = append(h.done, *e)
	}
}

func (h *doneHook) result() ([]string, []dlm.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.kinds...), append([]dlm.Event(nil), h.done...)
}
