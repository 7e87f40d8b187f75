package dlm

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// spyNode is a fakeNode that records when each request was sent, by script
// name, and can hold extend requests back.
type spyNode struct {
	*fakeNode
	mu   sync.Mutex
	sent map[string][]time.Time
	// onExtend, when set, is called as each extend request is sent.
	onExtend func()
	// stubborn makes an extend request run to completion once sent, as a
	// request already on the wire does, even if its context ends first.
	stubborn bool
}

var _ driver.Node = (*spyNode)(nil)

func newSpies(fs []*fakeNode) []*spyNode {
	ss := make([]*spyNode, len(fs))
	for i, f := range fs {
		ss[i] = &spyNode{fakeNode: f, sent: map[string][]time.Time{}}
	}
	return ss
}

func (s *spyNode) Eval(ctx context.Context, sc *driver.Script, keys, args []string) (any, error) {
	name := scriptName(sc)
	s.mu.Lock()
	s.sent[name] = append(s.sent[name], time.Now())
	hook, stubborn := s.onExtend, s.stubborn
	s.mu.Unlock()
	if name == "extend" {
		if hook != nil {
			hook()
		}
		if stubborn {
			ctx = context.WithoutCancel(ctx)
		}
	}
	return s.fakeNode.Eval(ctx, sc, keys, args)
}

// times returns when the requests for script name were sent.
func (s *spyNode) times(name string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.sent[name]...)
}

// spyManager returns a Manager over spies wrapping fs, closed when the test
// ends.
func spyManager(t *testing.T, fs []*fakeNode, opts ...ManagerOption) (*Manager, []*spyNode) {
	t.Helper()
	ss := newSpies(fs)
	ns := make([]driver.Node, len(ss))
	for i, s := range ss {
		ns[i] = s
	}
	m, err := New(ns, opts...)
	if err != nil {
		t.Fatalf("New(%d spies) = %v", len(ss), err)
	}
	t.Cleanup(func() { m.Close() })
	return m, ss
}

// sentTimes returns when requests for script name were sent to any of ss.
func sentTimes(ss []*spyNode, name string) []time.Time {
	var out []time.Time
	for _, s := range ss {
		out = append(out, s.times(name)...)
	}
	return out
}

// drop deletes key from fs, as a node restarted without persistence would.
func drop(fs []*fakeNode, key string) {
	for _, f := range fs {
		f.mu.Lock()
		delete(f.keys, key)
		f.mu.Unlock()
	}
}

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// heldBy reports whether every fake holds key with secret.
func heldBy(fs []*fakeNode, key, secret string) bool {
	for _, v := range holders(fs, key) {
		if v != secret {
			return false
		}
	}
	return secret != ""
}

// noneHold reports whether no fake holds any of keys.
func noneHold(fs []*fakeNode, keys ...string) bool {
	for _, k := range keys {
		if strings.Join(holders(fs, k), "") != "" {
			return false
		}
	}
	return true
}

var errWork = errors.New("work failed")

// TestLostOnUnlock checks that a Lost channel taken before Unlock is closed
// by the time Unlock returns, with or without auto-extension, and that
// Lost taken afterwards is closed at once.
func TestLostOnUnlock(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"plain", nil},
		{"auto-extend", []Option{WithAutoExtend(AutoExtend{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakes(5)
			m := newManager(t, fs)
			l, err := m.TryLock(context.Background(), "k", tc.opts...)
			if err != nil {
				t.Fatalf("TryLock(%q) = %v", "k", err)
			}
			lost := l.Lost()
			if isClosed(lost) {
				t.Fatal("Lost() is closed right after TryLock; want open")
			}
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatalf("Unlock() = %v; want nil", err)
			}
			if !isClosed(lost) {
				t.Error("Lost() taken before Unlock is still open after Unlock returned")
			}
			if !isClosed(l.Lost()) {
				t.Error("Lost() taken after Unlock is open; want closed at once")
			}
		})
	}
}

// TestLostAfterQuorumGone checks that an Extend finding the key gone on a
// quorum closes Lost, taken before or after it.
func TestLostAfterQuorumGone(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, before := range []bool{true, false} {
		fs := newFakes(5)
		m := newManager(t, fs)
		l, err := m.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatalf("TryLock(%q) = %v", "k", err)
		}
		var lost <-chan struct{}
		if before {
			lost = l.Lost()
		}
		waitFor(t, "the key on every node", func() bool { return heldBy(fs, rkey("k"), fs[0].secret()) })
		drop(fs[:3], rkey("k"))
		if err := l.Extend(context.Background(), time.Minute); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Extend() with the key gone on 3 of 5 nodes = %v; want ErrLockLost", err)
		}
		if !before {
			lost = l.Lost()
		}
		if !isClosed(lost) {
			t.Errorf("Lost() taken %s the failed Extend is open; want closed", map[bool]string{true: "before", false: "after"}[before])
		}
		if err := l.Unlock(context.Background()); !errors.Is(err, ErrLockLost) {
			t.Errorf("Unlock() of a lost lock = %v; want ErrLockLost", err)
		}
		waitFor(t, "the release of the remaining keys", func() bool { return noneHold(fs, rkey("k")) })
	}
}

// TestDoReturnsFnError checks that Do runs fn with the lock held (visible
// with LockFromContext), returns fn's error unchanged, and releases the lock
// on every node before returning.
func TestDoReturnsFnError(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	wrapped := errors.Join(errWork, errors.New("more"))
	for _, want := range []error{nil, errWork, wrapped, context.Canceled} {
		fs := newFakes(5)
		m := newManager(t, fs)
		ran := false
		err := m.Do(context.Background(), "job", func(ctx context.Context) error {
			ran = true
			l := LockFromContext(ctx)
			if l == nil || l.Key() != "job" {
				t.Fatalf("LockFromContext(fn's ctx) = %v; want the lock on %q", l, "job")
			}
			waitFor(t, "the key on every node", func() bool { return heldBy(fs, rkey("job"), l.secret) })
			if ctx.Err() != nil {
				t.Errorf("fn's ctx is done while the lock is held: %v", context.Cause(ctx))
			}
			return want
		})
		if !ran {
			t.Fatal("Do did not run fn")
		}
		if err != want {
			t.Errorf("Do(fn returning %v) = %v; want fn's error unchanged", want, err)
		}
		if !noneHold(fs, rkey("job")) {
			t.Errorf("after Do, nodes hold %q; want nothing", holders(fs, rkey("job")))
		}
	}
	if LockFromContext(context.Background()) != nil {
		t.Error("LockFromContext(Background) is not nil")
	}
}

// TestDoNotObtained checks that Do does not run fn when the lock cannot be
// taken, and returns the acquire error.
func TestDoNotObtained(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	setUp(fs, "job", "HHH")
	m := newManager(t, fs, WithRetry(2, FixedBackoff(time.Millisecond)))
	err := m.Do(context.Background(), "job", func(context.Context) error {
		t.Error("Do ran fn without the lock")
		return nil
	})
	if !errors.Is(err, ErrNotObtained) {
		t.Errorf("Do on a held lock = %v; want ErrNotObtained", err)
	}
}

// TestDoInvalid checks that Do rejects a nil fn and bad auto-extension
// options before any round trip.
func TestDoInvalid(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	m := newManager(t, fs)
	fn := func(context.Context) error {
		t.Error("Do ran fn despite invalid input")
		return nil
	}
	for _, tc := range []struct {
		name string
		fn   func(context.Context) error
		opts []Option
	}{
		{"nil fn", nil, nil},
		{"Remaining 2", fn, []Option{WithAutoExtend(AutoExtend{Remaining: 2})}},
		{"Remaining 1", fn, []Option{WithAutoExtend(AutoExtend{Remaining: 1})}},
		{"Remaining -0.5", fn, []Option{WithAutoExtend(AutoExtend{Remaining: -0.5})}},
		{"Remaining NaN", fn, []Option{WithAutoExtend(AutoExtend{Remaining: math.NaN()})}},
		{"MaxHold -1s", fn, []Option{WithAutoExtend(AutoExtend{MaxHold: -time.Second})}},
		{"nil option", fn, []Option{nil}},
	} {
		if err := m.Do(context.Background(), "job", tc.fn, tc.opts...); !errors.Is(err, ErrInvalid) {
			t.Errorf("Do(%s) = %v; want ErrInvalid", tc.name, err)
		}
		if tc.opts == nil {
			continue
		}
		if _, err := m.TryLock(context.Background(), "k", tc.opts...); !errors.Is(err, ErrInvalid) {
			t.Errorf("TryLock(%s) = %v; want ErrInvalid", tc.name, err)
		}
	}
	if got := countAll(fs, ""); got != 0 {
		t.Errorf("invalid calls sent %d requests; want 0", got)
	}
}
