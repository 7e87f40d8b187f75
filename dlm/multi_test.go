package dlm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLockAllKeys checks that LockAll sorts and de-duplicates its keys, names
// the lock after them, and writes every key with one secret on every node.
func TestLockAllKeys(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, tc := range []struct {
		in   []string
		keys []string
		name string
	}{
		{[]string{"a"}, []string{"a"}, "a"},
		{[]string{"b", "a"}, []string{"a", "b"}, "a,b"},
		{[]string{"c", "a", "c", "b", "a"}, []string{"a", "b", "c"}, "a,b,c"},
		{[]string{"{o42}:y", "{o42}:x"}, []string{"{o42}:x", "{o42}:y"}, "{o42}:x,{o42}:y"},
	} {
		fs := newFakes(5)
		m := newManager(t, fs)
		in := slices.Clone(tc.in)
		l, err := m.LockAll(context.Background(), in)
		if err != nil {
			t.Fatalf("LockAll(%q) = %v", tc.in, err)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("LockAll(%q) reordered its argument to %q", tc.in, in)
		}
		if got := l.Keys(); !slices.Equal(got, tc.keys) {
			t.Errorf("LockAll(%q).Keys() = %q; want %q", tc.in, got, tc.keys)
		}
		if got := l.Key(); got != tc.name {
			t.Errorf("LockAll(%q).Key() = %q; want %q", tc.in, got, tc.name)
		}
		l.Keys()[0] = "changed"
		if got := l.Keys(); !slices.Equal(got, tc.keys) {
			t.Errorf("Keys() after changing its result = %q; want a copy returned", got)
		}
		for _, k := range tc.keys {
			waitFor(t, "every key on every node", func() bool { return heldBy(fs, rkey(k), l.secret) })
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock() = %v; want nil", err)
		}
	}
}

// TestLockAllAllOrNothing checks that each node grants all the keys or
// none: one key held by another client on a quorum makes LockAll fail and
// leaves none of the other keys on any node; held on a minority, the lock
// is obtained but the nodes holding that key grant none of the others.
func TestLockAllAllOrNothing(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	keys := []string{"a", "b", "c"}
	for _, tc := range []struct {
		states string // of key b, as setUp reads them
		ok     bool
	}{
		{"HHH..", false},
		{"..HHH", false},
		{"H.H.H", false},
		{"HH...", true},
		{".H..H", true},
	} {
		fs := newFakes(5)
		setUp(fs, "b", tc.states)
		m := newManager(t, fs, patient)
		l, err := m.TryLockAll(context.Background(), keys)
		if !tc.ok {
			if l != nil || !errors.Is(err, ErrNotObtained) {
				t.Fatalf("TryLockAll(%q) with b held on %s = %v, %v; want ErrNotObtained", keys, tc.states, l, err)
			}
			// Released where granted; the nodes that refused wrote nothing.
			mayHold := 5 - strings.Count(tc.states, "H")
			// A release is counted when it is sent, and runs a moment
			// later: wait for both.
			waitFor(t, "the failed attempt released", func() bool {
				return countAll(fs, "release") == mayHold && noneHold(fs, rkey("a"), rkey("c"))
			})
			continue
		}
		if err != nil {
			t.Fatalf("TryLockAll(%q) with b held on %s = %v; want a lock", keys, tc.states, err)
		}
		waitFor(t, "the acquire on every node", func() bool { return countAll(fs, "acquire") == 5 })
		for i, f := range fs {
			for _, k := range keys {
				want := l.secret
				switch {
				case tc.states[i] == 'H' && k == "b":
					want = "other"
				case tc.states[i] == 'H':
					want = ""
				}
				if got, _, _ := f.get(rkey(k)); got != want {
					t.Errorf("b held on %s: node %s holds %s = %q; want %q", tc.states, f.Addr(), k, got, want)
				}
			}
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock() = %v; want nil", err)
		}
		if got := holders(fs, rkey("b")); slices.Contains(got, l.secret) {
			t.Errorf("after Unlock, b is held %q", got)
		}
	}
}

// TestLockAllConflicts checks that a multi-key lock excludes a single-key
// lock of any of its keys and a multi-key lock sharing one, but not a
// disjoint one; and the other way round.
func TestLockAllConflicts(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, tc := range []struct {
		held, want []string
		ok         bool
	}{
		{[]string{"a", "b"}, []string{"a"}, false},
		{[]string{"a", "b"}, []string{"b"}, false},
		{[]string{"a", "b"}, []string{"b", "c"}, false},
		{[]string{"a", "b"}, []string{"c", "b", "a"}, false},
		{[]string{"a", "b"}, []string{"c"}, true},
		{[]string{"a", "b"}, []string{"c", "d"}, true},
		{[]string{"b"}, []string{"a", "b", "c"}, false},
		{[]string{"b"}, []string{"a", "c"}, true},
	} {
		fs := newFakes(5)
		m := newManager(t, fs)
		held, err := m.TryLockAll(context.Background(), tc.held)
		if err != nil {
			t.Fatal(err)
		}
		var l *Lock
		if len(tc.want) == 1 {
			l, err = m.TryLock(context.Background(), tc.want[0])
		} else {
			l, err = m.TryLockAll(context.Background(), tc.want)
		}
		switch {
		case tc.ok && err != nil:
			t.Errorf("with %q held, lock of %q = %v; want it obtained", tc.held, tc.want, err)
		case !tc.ok && !errors.Is(err, ErrNotObtained):
			t.Errorf("with %q held, lock of %q = %v; want ErrNotObtained", tc.held, tc.want, err)
		}
		if l != nil {
			if err := l.Unlock(context.Background()); err != nil {
				t.Errorf("Unlock(%q) = %v", tc.want, err)
			}
		}
		if err := held.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock(%q) = %v", tc.held, err)
		}
	}
}

// TestLockAllExtendUnlock checks that Extend and Unlock of a multi-key lock
// cover every key on every node.
func TestLockAllExtendUnlock(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	keys := []string{"c", "a", "b"}
	fs := newFakes(5)
	m := newManager(t, fs, patient)
	l, err := m.LockAll(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the acquire on every node", func() bool { return countAll(fs, "acquire") == 5 })
	if err := l.Extend(context.Background(), time.Hour); err != nil {
		t.Fatalf("Extend(1h) = %v; want nil", err)
	}
	waitFor(t, "the extension on every node", func() bool { return countAll(fs, "extend") == 5 })
	for _, f := range fs {
		for _, k := range keys {
			if v, exp, _ := f.get(rkey(k)); v != l.secret || time.Until(exp) < 59*time.Minute {
				t.Errorf("after Extend(1h), node %s holds %s = %q for %v; want the secret for about an hour", f.Addr(), k, v, time.Until(exp).Round(time.Second))
			}
		}
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock() = %v; want nil", err)
	}
	for _, k := range keys {
		if !noneHold(fs, rkey(k)) {
			t.Errorf("after Unlock, nodes hold %s = %q; want nothing", k, holders(fs, rkey(k)))
		}
	}
}

// TestLockAllPartlyLost checks that a node counts for a multi-key Extend
// only if it still holds every key: one key gone on a quorum loses the lock.
func TestLockAllPartlyLost(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	m := newManager(t, fs, patient)
	l, err := m.LockAll(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the acquire on every node", func() bool { return countAll(fs, "acquire") == 5 })
	drop(fs[:3], rkey("b"))
	if err := l.Extend(context.Background(), time.Minute); !errors.Is(err, ErrLockLost) {
		t.Errorf("Extend() with b gone on 3 of 5 nodes = %v; want ErrLockLost", err)
	}
	if err := l.Unlock(context.Background()); !errors.Is(err, ErrLockLost) {
		t.Errorf("Unlock() = %v; want ErrLockLost", err)
	}
	if !noneHold(fs, rkey("a"), rkey("b")) {
		t.Errorf("after Unlock, nodes hold a %q, b %q; want nothing", holders(fs, rkey("a")), holders(fs, rkey("b")))
	}
}

// TestDoAll checks that DoAll runs fn with every key held, and releases
// them all after.
func TestDoAll(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	m := newManager(t, fs)
	err := m.DoAll(context.Background(), []string{"b", "a", "b"}, func(ctx context.Context) error {
		l := LockFromContext(ctx)
		if got := l.Keys(); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("LockFromContext(ctx).Keys() = %q; want [a b]", got)
		}
		if _, err := m.TryLock(ctx, "a"); !errors.Is(err, ErrNotObtained) {
			t.Errorf("TryLock(%q) inside DoAll = %v; want ErrNotObtained", "a", err)
		}
		return errWork
	})
	if err != errWork {
		t.Errorf("DoAll() = %v; want fn's error", err)
	}
	// The TryLock inside fn may have been granted "a" on a node that
	// DoAll's acquire had not reached yet; that failed attempt's release
	// runs on its own, a moment after TryLock returned.
	waitFor(t, "no node to hold a or b after DoAll", func() bool { return noneHold(fs, rkey("a"), rkey("b")) })
}

// TestLockAllInvalid checks that an empty key list, or an empty key in it,
// is rejected before any round trip.
func TestLockAllInvalid(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	m := newManager(t, fs)
	fn := func(context.Context) error {
		t.Error("DoAll ran fn for invalid keys")
		return nil
	}
	for _, keys := range [][]string{nil, {}, {""}, {"a", ""}} {
		if _, err := m.LockAll(context.Background(), keys); !errors.Is(err, ErrInvalid) {
			t.Errorf("LockAll(%q) = %v; want ErrInvalid", keys, err)
		}
		if _, err := m.TryLockAll(context.Background(), keys); !errors.Is(err, ErrInvalid) {
			t.Errorf("TryLockAll(%q) = %v; want ErrInvalid", keys, err)
		}
		if err := m.DoAll(context.Background(), keys, fn); !errors.Is(err, ErrInvalid) {
			t.Errorf("DoAll(%q) = %v; want ErrInvalid", keys, err)
		}
	}
	if got := countAll(fs, ""); got != 0 {
		t.Errorf("invalid calls sent %d requests; want 0", got)
	}
}
