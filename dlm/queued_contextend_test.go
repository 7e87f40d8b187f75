package dlm_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// TestQueuedWaiterContextEndClass checks item 9 of the contract review: a
// Lock call whose context ends while it waits gets one behaviour, wherever
// what kept it waiting is. Its error matches the context's error and the
// class of what kept it waiting: ErrNotObtained when the lock was held, by
// another Manager or by a caller of its own Manager, behind whom it queued;
// ErrUnavailable when the attempts made for it found too many nodes
// failed. errors.As finds a *QuorumError where an attempt's vote is there
// to carry it: its own last attempt, or the last attempt of the caller of
// its Manager that competed on the nodes while it queued. A lock held by a
// caller of its own Manager was obtained, so no vote refused it: the error
// then carries none.
func TestQueuedWaiterContextEndClass(t *testing.T) {
	t.Parallel()
	_, nodes := startNodes(t, 3)
	other := rwManager(t, nodes)
	m := rwManager(t, nodes)
	down := rwManager(t, []driver.Node{downNode("127.0.0.1:1"), downNode("127.0.0.1:2"), downNode("127.0.0.1:3")})
	bg := context.Background()

	// compete starts a Lock call of mm for key that competes on the nodes,
	// and returns once it has completed an attempt, and a function that
	// ends the call.
	compete := func(t *testing.T, mm *dlm.Manager, key string) func() {
		t.Helper()
		ctx, cancel := context.WithCancel(bg)
		attempted := make(chan struct{})
		var once sync.Once
		hook := hookFunc(func(e *dlm.Event) {
			if e.Kind == dlm.EventAttempt && e.Err != nil {
				once.Do(func() { close(attempted) })
			}
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			if l, err := mm.Lock(ctx, key, dlm.WithHook(hook)); err == nil {
				l.Unlock(bg)
			}
		}()
		select {
		case <-attempted:
		case <-done:
			t.Fatal("the competing caller returned before an attempt was refused")
		}
		return func() { cancel(); <-done }
	}
	hold := func(mm *dlm.Manager) func(t *testing.T, key string) func() {
		return func(t *testing.T, key string) func() {
			t.Helper()
			l, err := mm.Lock(bg, key)
			if err != nil {
				t.Fatal(err)
			}
			return func() { l.Unlock(bg) }
		}
	}
	for _, tc := range []struct {
		name string
		m    *dlm.Manager // the waiter's
		// wait makes the waiter's Lock wait, and returns what ends it.
		wait func(t *testing.T, key string) func()
		// queued: the waiter queues behind a caller of its own Manager.
		queued bool
		class  error
		// vote: errors.As finds a *QuorumError of a lock attempt.
		vote bool
	}{
		{"held by another manager", m, hold(other), false, dlm.ErrNotObtained, true},
		{"held by a caller of this manager", m, hold(m), true, dlm.ErrNotObtained, false},
		{"queued behind a caller of this manager that waits for another manager", m, func(t *testing.T, key string) func() {
			release := hold(other)(t, key)
			end := compete(t, m, key)
			return func() { end(); release() }
		}, true, dlm.ErrNotObtained, true},
		{"queued behind a caller of this manager whose nodes fail", down, func(t *testing.T, key string) func() {
			return compete(t, down, key)
		}, true, dlm.ErrUnavailable, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := t.Name()
			defer tc.wait(t, key)()
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			var own sync.Once
			hook := hookFunc(func(e *dlm.Event) {
				if e.Kind == dlm.EventAttempt && e.Err != nil {
					own.Do(cancel) // its own attempt completed: give up
				}
			})
			res := make(chan error, 1)
			go func() {
				l, err := tc.m.Lock(ctx, key, dlm.WithHook(hook))
				if err == nil {
					l.Unlock(bg)
				}
				res <- err
			}()
			if tc.queued {
				waitUntil(t, "the waiter in line", func() bool { return dlm.LocalWaiters(tc.m, key) == 1 })
				cancel()
			}
			err := <-res
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Lock() = %v; want an error matching context.Canceled", err)
			}
			for _, class := range []error{dlm.ErrNotObtained, dlm.ErrUnavailable} {
				if got, want := errors.Is(err, class), class == tc.class; got != want {
					t.Errorf("Lock() = %v; errors.Is(err, %v) = %v, want %v", err, class, got, want)
				}
			}
			var qe *dlm.QuorumError
			switch found := errors.As(err, &qe); {
			case found != tc.vote:
				t.Errorf("Lock() = %v; errors.As finds a *QuorumError: %v, want %v", err, found, tc.vote)
			case found && (qe.Op != "lock" || !errors.Is(qe, tc.class)):
				t.Errorf("Lock(): *QuorumError = %v (op %q); want a lock attempt matching %v", qe, qe.Op, tc.class)
			}
		})
	}
}
