package dlm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// lockOn takes lock "k" on fresh fake nodes, and waits until every node
// holds it (TryLock returns once a quorum did).
func lockOn(t *testing.T, n int, opts ...ManagerOption) ([]*fakeNode, *Manager, *Lock) {
	t.Helper()
	fs := newFakes(n)
	m := newManager(t, fs, append([]ManagerOption{patient}, opts...)...)
	l, err := m.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatalf("TryLock(%q) = %v", "k", err)
	}
	if l.Key() != "k" {
		t.Fatalf("Key() = %q; want %q", l.Key(), "k")
	}
	waitFor(t, "the key on every node", func() bool {
		got := holders(fs, rkey("k"))
		return got[0] != "" && strings.Count(strings.Join(got, ","), got[0]) == n
	})
	return fs, m, l
}

// TestUnlockKeepsNewHolder checks that Unlock deletes only our secret: when
// our keys expired and another client took them, they survive, and Unlock
// reports the lock lost.
func TestUnlockKeepsNewHolder(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs, _, l := lockOn(t, 5)
	for _, f := range fs {
		f.set(rkey("k"), "new holder", time.Minute)
	}
	err := l.Unlock(context.Background())
	var qerr *QuorumError
	if !errors.Is(err, ErrLockLost) || !errors.As(err, &qerr) || qerr.Op != opUnlock || qerr.Against != 5 {
		t.Fatalf("Unlock() = %v; want ErrLockLost with 5 nodes against", err)
	}
	if got := holders(fs, rkey("k")); strings.Join(got, ",") != "new holder,new holder,new holder,new holder,new holder" {
		t.Errorf("after Unlock, nodes hold %q; want the new holder's secret everywhere", got)
	}
}

// TestUnlock checks a plain Unlock, a second Unlock, and that Unlock ignores
// a cancelled context.
func TestUnlock(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, cancelled := range []bool{false, true} {
		fs, _, l := lockOn(t, 5)
		ctx, cancel := context.WithCancel(context.Background())
		if cancelled {
			cancel()
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock(cancelled %v) = %v; want nil", cancelled, err)
		}
		cancel()
		waitFor(t, "release on every node", func() bool { return countAll(fs, "release") == 5 })
		if got := holders(fs, rkey("k")); strings.Join(got, "") != "" {
			t.Errorf("after Unlock(cancelled %v), nodes hold %q; want nothing", cancelled, got)
		}
		if err := l.Unlock(context.Background()); !errors.Is(err, ErrNotHeld) || errors.Is(err, ErrLockLost) {
			t.Errorf("second Unlock() = %v; want ErrNotHeld, not ErrLockLost", err)
		}
		if err := l.Extend(context.Background(), time.Second); !errors.Is(err, ErrNotHeld) || errors.Is(err, ErrLockLost) {
			t.Errorf("Extend after Unlock = %v; want ErrNotHeld, not ErrLockLost", err)
		}
		if got := countAll(fs, "release") + countAll(fs, "extend"); got != 5 {
			t.Errorf("%d release and extend calls in all; want the 5 releases of the first Unlock", got)
		}
	}
}

// TestUnlockUnavailable checks Unlock when too many nodes fail: the error is
// ErrUnavailable naming the nodes, without the secret, and the nodes that
// answered are released.
func TestUnlockUnavailable(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs, _, l := lockOn(t, 5)
	secret, _, _ := fs[0].get(rkey("k"))
	fs[1].inject(refuse, 0)
	fs[2].inject(errReply, 0)
	fs[3].inject(loseReply, 0)
	err := l.Unlock(context.Background())
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrLockLost) {
		t.Fatalf("Unlock() = %v; want ErrUnavailable", err)
	}
	var nerr *NodeError
	if !errors.As(err, &nerr) || nerr.Node != "fake-1" {
		t.Errorf("Unlock() = %v; want the first *NodeError for fake-1", err)
	}
	if secret == "" || strings.Contains(err.Error(), secret) {
		t.Errorf("Unlock() = %q contains the secret %q", err, secret)
	}
	// fake-3 applied the release and lost the reply; fake-1 and fake-2
	// never ran it.
	waitFor(t, "release on every node", func() bool { return countAll(fs, "release") == 5 })
	if got := strings.Join(holders(fs, rkey("k")), ","); got != ","+secret+","+secret+",," {
		t.Errorf("after Unlock, nodes hold %q; want the secret on fake-1 and fake-2 only", got)
	}
}

// TestExtend checks an Extend that succeeds.
func TestExtend(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs, _, l := lockOn(t, 5, WithTTL(time.Second))
	before := l.Until()
	if err := l.Extend(context.Background(), time.Hour); err != nil {
		t.Fatalf("Extend(1h) = %v; want nil", err)
	}
	if after := l.Until(); after.Sub(before) < 59*time.Minute {
		t.Errorf("Until moved from %v to %v; want about an hour later", before, after)
	}
	// Extend, like TryLock, returns once a quorum answered.
	extended := 0
	for _, f := range fs {
		if _, exp, ok := f.get(rkey("k")); ok && time.Until(exp) > 59*time.Minute {
			extended++
		}
	}
	if extended < quorum(5) {
		t.Errorf("%d nodes have the key for about an hour; want at least %d", extended, quorum(5))
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock after Extend = %v; want nil", err)
	}
}

// TestExtendQuorumLost checks that an Extend finding a quorum of nodes
// without our key reports ErrLockLost, recreates nothing, and that later
// Extends fail at once.
func TestExtendQuorumLost(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs, _, l := lockOn(t, 5)
	before := l.Until()
	fs[0].set(rkey("k"), "", 0) // expired
	fs[2].set(rkey("k"), "", 0)
	fs[4].set(rkey("k"), "other", time.Minute)
	err := l.Extend(context.Background(), time.Minute)
	if !errors.Is(err, ErrLockLost) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Extend() = %v; want ErrLockLost", err)
	}
	if got := l.Until(); !got.Equal(before) {
		t.Errorf("Until moved from %v to %v on a failed Extend", before, got)
	}
	if got := holders(fs, rkey("k")); got[0] != "" || got[2] != "" || got[4] != "other" {
		t.Errorf("after Extend, nodes hold %q; want nothing recreated, the other holder kept", got)
	}
	// The first Extend returned once 3 nodes said no; the others follow.
	waitFor(t, "extend on every node", func() bool { return countAll(fs, "extend") == 5 })
	for i := 0; i < 2; i++ {
		if err := l.Extend(context.Background(), time.Minute); !errors.Is(err, ErrLockLost) {
			t.Errorf("Extend() after the loss = %v; want ErrLockLost", err)
		}
	}
	if got := countAll(fs, "extend") - 5; got != 0 {
		t.Errorf("Extend after the loss sent %d requests; want 0", got)
	}
}

// TestExtendUnavailable checks that node failures beyond tolerance make
// Extend fail with ErrUnavailable, leave Until alone, and do not mark the
// lock lost: once the nodes recover, Extend works.
func TestExtendUnavailable(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs, _, l := lockOn(t, 5)
	secret, _, _ := fs[0].get(rkey("k"))
	before := l.Until()
	for _, f := range fs[2:] {
		f.inject(refuse, 0)
	}
	err := l.Extend(context.Background(), time.Minute)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrLockLost) {
		t.Fatalf("Extend() = %v; want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("Extend() = %q contains the secret", err)
	}
	if got := l.Until(); !got.Equal(before) {
		t.Errorf("Until moved from %v to %v on a failed Extend", before, got)
	}
	for _, f := range fs[2:] {
		f.inject(healthy, 0)
	}
	if err := l.Extend(context.Background(), time.Minute); err != nil {
		t.Errorf("Extend() after the nodes recovered = %v; want nil", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock() = %v; want nil", err)
	}
}

// TestExtendInvalid checks that Extend validates its TTL before any request.
func TestExtendInvalid(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs, _, l := lockOn(t, 3)
	var nilCtx context.Context
	for _, tc := range []struct {
		ctx context.Context
		ttl time.Duration
	}{
		{context.Background(), 0}, {context.Background(), -time.Second}, {context.Background(), 2 * time.Millisecond}, {nilCtx, time.Second},
	} {
		if err := l.Extend(tc.ctx, tc.ttl); !errors.Is(err, ErrInvalid) {
			t.Errorf("Extend(%v) = %v; want ErrInvalid", tc.ttl, err)
		}
	}
	if err := l.Unlock(nilCtx); !errors.Is(err, ErrInvalid) {
		t.Errorf("Unlock(nil) = %v; want ErrInvalid", err)
	}
	if got := countAll(fs, "extend") + countAll(fs, "release"); got != 0 {
		t.Errorf("%d requests for invalid calls; want 0", got)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock() = %v; want nil", err)
	}
}
