package dlm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// TestNodeTimeoutNotBelowTTLInvalid checks that a node timeout set with
// WithNodeTimeout that is not below the TTL in effect is refused with
// ErrInvalid before any round trip: as a manager's default at New and
// Open, and per call, where a call's TTL or node timeout meets the other
// from the manager's defaults. A node timeout just below the TTL, or
// derived from it, is accepted, and Extend may shorten a lock below it.
func TestNodeTimeoutNotBelowTTLInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// manager returns a manager over three in-memory nodes.
	manager := func(t *testing.T, opts ...dlm.ManagerOption) *dlm.Manager {
		t.Helper()
		m, err := dlm.New(asDriverNodes(memNodes(3)), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	slow := dlm.WithNodeTimeout(2 * time.Second) // the manager's, in the per-call rows
	for _, tc := range []struct {
		name  string
		call  func(t *testing.T) error
		valid bool
	}{
		{"New, node timeout = TTL", func(t *testing.T) error {
			_, err := dlm.New(asDriverNodes(memNodes(3)), dlm.WithTTL(time.Second), dlm.WithNodeTimeout(time.Second))
			return err
		}, false},
		{"New, node timeout > TTL", func(t *testing.T) error {
			_, err := dlm.New(asDriverNodes(memNodes(3)), dlm.WithTTL(time.Second), dlm.WithNodeTimeout(time.Minute))
			return err
		}, false},
		{"New, node timeout = the default TTL", func(t *testing.T) error {
			_, err := dlm.New(asDriverNodes(memNodes(3)), dlm.WithNodeTimeout(dlm.DefaultTTL))
			return err
		}, false},
		{"Open, node timeout = TTL", func(t *testing.T) error {
			_, err := dlm.Open([]string{"redis://127.0.0.1:1"}, dlm.WithTTL(time.Second), dlm.WithNodeTimeout(time.Second))
			return err
		}, false},
		{"TryLock, WithTTL = the manager's node timeout", func(t *testing.T) error {
			_, err := manager(t, slow).TryLock(ctx, "k", dlm.WithTTL(2*time.Second))
			return err
		}, false},
		{"Lock, WithNodeTimeout > the manager's TTL", func(t *testing.T) error {
			_, err := manager(t, dlm.WithTTL(time.Second)).Lock(ctx, "k", slow)
			return err
		}, false},
		{"Do", func(t *testing.T) error {
			return manager(t, slow).Do(ctx, "k", func(context.Context) error { return nil }, dlm.WithTTL(time.Second))
		}, false},
		{"TryRLock", func(t *testing.T) error {
			_, err := manager(t, slow).TryRLock(ctx, "k", dlm.WithTTL(time.Second))
			return err
		}, false},
		{"Semaphore", func(t *testing.T) error {
			_, err := manager(t, slow).Semaphore("s", 1, dlm.WithTTL(time.Second))
			return err
		}, false},
		{"TryAcquire", func(t *testing.T) error {
			s, err := manager(t, slow).Semaphore("s", 1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.TryAcquire(ctx, dlm.WithTTL(time.Second))
			return err
		}, false},
		{"Campaign", func(t *testing.T) error {
			_, err := campaign(ctx, manager(t, slow), "e", "v", dlm.WithTTL(time.Second))
			return err
		}, false},
		{"New, node timeout just below TTL", func(t *testing.T) error {
			_, err := dlm.New(asDriverNodes(memNodes(3)), dlm.WithTTL(time.Second), dlm.WithNodeTimeout(time.Second-time.Millisecond))
			return err
		}, true},
		{"TryLock, node timeout derived from a short TTL", func(t *testing.T) error {
			l, err := manager(t).TryLock(ctx, "k", dlm.WithTTL(10*time.Millisecond))
			if err == nil {
				l.Unlock(ctx)
			}
			if errors.Is(err, dlm.ErrNotObtained) {
				err = nil // the validity may run out in the round trip
			}
			return err
		}, true},
		{"Extend to less than the node timeout (MaxHold's last extension)", func(t *testing.T) error {
			l, err := manager(t, slow).TryLock(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock(ctx)
			return l.Extend(ctx, time.Second)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.call(t)
			switch {
			case tc.valid && err != nil:
				t.Errorf("%s = %v; want nil", tc.name, err)
			case !tc.valid && (!errors.Is(err, dlm.ErrInvalid) || !strings.Contains(err.Error(), "node timeout")):
				t.Errorf("%s = %v; want ErrInvalid about the node timeout", tc.name, err)
			}
		})
	}
}

// TestNilLockUnlock checks that the methods of a nil *Lock (a failed
// Lock's result, unlocked by a defer written before the error check), of
// a nil *Leadership and of a nil *Semaphore never panic: Unlock, Extend
// and Resign return ErrNotHeld, a nil Semaphore's calls ErrInvalid, and
// the accessors say the lock is not held.
func TestNilLockUnlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, err := dlm.New(asDriverNodes(memNodes(1)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	held, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)
	l, err := m.TryLock(ctx, "k") // the habit: defer l.Unlock(ctx) before checking err
	if l != nil || !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryLock of a held key = %v, %v; want nil, ErrNotObtained", l, err)
	}
	var ld *dlm.Leadership
	var s *dlm.Semaphore
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"Lock.Unlock", func() error { return l.Unlock(ctx) }, dlm.ErrNotHeld},
		{"Lock.Extend", func() error { return l.Extend(ctx, time.Second) }, dlm.ErrNotHeld},
		{"Leadership.Resign", func() error { return ld.Resign(ctx) }, dlm.ErrNotHeld},
		{"Semaphore.TryAcquire", func() error { _, err := s.TryAcquire(ctx); return err }, dlm.ErrInvalid},
		{"Semaphore.Acquire", func() error { _, err := s.Acquire(ctx); return err }, dlm.ErrInvalid},
		{"Semaphore.Do", func() error { return s.Do(ctx, func(context.Context) error { return nil }) }, dlm.ErrInvalid},
	} {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("nil %s = %v; want %v", tc.name, err, tc.want)
		}
	}
	select {
	case <-l.Lost():
	default:
		t.Error("nil Lock.Lost() is not closed; want closed: a nil lock is not held")
	}
	select {
	case <-ld.Lost():
	default:
		t.Error("nil Leadership.Lost() is not closed; want closed")
	}
	if l.Key() != "" || l.Keys() != nil || !l.Until().IsZero() || l.Token() != 0 || l.GrantID() != 0 || l.Shared() {
		t.Errorf("nil Lock's accessors: Key %q, Keys %v, Until %v, Token %d, GrantID %d, Shared %v; want zero values",
			l.Key(), l.Keys(), l.Until(), l.Token(), l.GrantID(), l.Shared())
	}
	if h := l.Handle(); len(h.Keys) != 0 {
		t.Errorf("nil Lock's Handle = %v; want the zero Handle", h)
	}
	if _, err := m.Resume(ctx, l.Handle()); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("Resume(nil Lock's Handle) = %v; want ErrInvalid", err)
	}
	if ld.Name() != "" || ld.Value() != "" || ld.Term() != 0 || ld.GrantID() != 0 || !ld.Until().IsZero() {
		t.Errorf("nil Leadership's accessors: Name %q, Value %q, Term %d, GrantID %d, Until %v; want zero values",
			ld.Name(), ld.Value(), ld.Term(), ld.GrantID(), ld.Until())
	}
	if s.Name() != "" || s.Limit() != 0 || s.Quorum() != 0 {
		t.Errorf("nil Semaphore's accessors: Name %q, Limit %d, Quorum %d; want zero values", s.Name(), s.Limit(), s.Quorum())
	}
}
