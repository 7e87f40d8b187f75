//go:build go1.25

// The in-process hand-over on testing/synctest's fake clock, where no time
// passes between a grant and an Unlock that follows it. See
// synctest_test.go for the build constraint; its go:debug line covers this
// file too.

package dlm

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestLostLockNotHandedOver checks that a lock found gone on the nodes is
// never handed to a caller in line, even one still waiting when it is
// unlocked and well within the hand-over's time slice: the loss gives the
// turn to the first caller in line, which obtains the lock from the nodes,
// and the second waits for that caller's lock. Two holders at once would
// follow otherwise.
func TestLostLockNotHandedOver(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		m := newManager(t, fs, WithTTL(time.Minute))
		ctx := context.Background()
		first, err := m.Lock(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		res := make(chan *Lock, 2)
		for range 2 {
			go func() {
				l, err := m.Lock(ctx, "k")
				if err != nil {
					t.Errorf("waiting Lock(%q) = %v", "k", err)
				}
				res <- l
			}()
		}
		synctest.Wait()
		if n := queued(m, rkey("k")); n != 2 {
			t.Fatalf("%d callers in line; want 2", n)
		}
		drop(fs, rkey("k"))
		if err := first.Extend(ctx, time.Minute); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Extend after the key vanished = %v; want ErrLockLost", err)
		}
		second := <-res
		if second == nil {
			t.FailNow()
		}
		if err := first.Unlock(ctx); !errors.Is(err, ErrLockLost) {
			t.Errorf("Unlock of the lost lock = %v; want ErrLockLost", err)
		}
		synctest.Wait()
		select {
		case third := <-res:
			t.Fatalf("the third caller obtained the lock (handed over: %v) while the second held it", third != nil && third.secret == first.secret)
		default:
		}
		if second.secret == first.secret || !heldBy(fs, rkey("k"), second.secret) {
			t.Errorf("the second caller holds the lost lock's secret: %v, its own on every node: %v; want false, true",
				second.secret == first.secret, heldBy(fs, rkey("k"), second.secret))
		}
		if err := second.Unlock(ctx); err != nil {
			t.Errorf("second caller's Unlock = %v", err)
		}
		third := <-res
		if third == nil {
			t.FailNow()
		}
		if third.secret == first.secret {
			t.Error("the third caller holds the lost lock's secret")
		}
		if err := third.Unlock(ctx); err != nil {
			t.Errorf("third caller's Unlock = %v", err)
		}
	})
}

// TestLocalHandOver checks when Unlock hands the lock to the next caller in
// line without a round trip — same secret, same validity — and when it goes
// back to the nodes instead: a fenced lock (each grant needs a greater
// fencing token), a lease too short for the next caller, a lock passed around for
// longer than handOverSlice, and no one in line. It runs on the fake clock:
// on a loaded machine's real one, the time between a grant and the Unlock
// that follows it is anyone's guess, and handOverSlice is 20 ms.
func TestLocalHandOver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		before time.Duration // held this long before Unlock
		handed bool
	}{
		{"next in line takes it", time.Minute, 0, true},
		{"lease too short for the next", 200 * time.Millisecond, 120 * time.Millisecond, false},
		{"passed around too long", time.Minute, handOverSlice + 10*time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(3)
				m := newManager(t, fs, WithTTL(tc.ttl))
				ctx := context.Background()
				first, res := holdWithNextInLine(t, m, "k")
				time.Sleep(tc.before)
				requests := countAll(fs, "")
				firstUntil := first.Until() // in the past once unlocked
				if err := first.Unlock(ctx); err != nil {
					t.Fatalf("Unlock = %v", err)
				}
				next := <-res
				if next == nil {
					return
				}
				handed := next.secret == first.secret
				if handed != tc.handed {
					t.Errorf("lock handed over in the manager: %v; want %v", handed, tc.handed)
				}
				if sent := countAll(fs, "") - requests; handed && (sent != 0 || next.Until() != firstUntil) {
					t.Errorf("hand-over sent %d requests and moved the validity from %v to %v; want none and the same validity", sent, firstUntil, next.Until())
				}
				if err := next.Unlock(ctx); err != nil {
					t.Fatalf("Unlock of the lock handed over = %v", err)
				}
				if got := holders(fs, rkey("k")); got[0]+got[1]+got[2] != "" {
					t.Errorf("after the last Unlock, nodes hold %q; want nothing", got)
				}
			})
		})
	}
}

// TestNoHandOverAfterFailedExtendOnClock checks, on the fake clock where the
// Unlock always comes within the hand-over's slice, that a lock whose Extend
// failed while the nodes applied the longer TTL (the replies lost, or the
// caller's context ended once the requests had run) is never handed to the
// caller in line, whose TTL is shorter: that caller gets the lock from the
// nodes under a secret of its own, and no node keeps its key longer than its
// TTL. A hand-over would give the receiver a lock whose keys outlive the
// validity it was told, and two holders would follow its expiry.
// TestNoHandOverAfterFailedExtend checks the same outcome on real servers.
func TestNoHandOverAfterFailedExtendOnClock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		cancelCtx bool
	}{
		{"reply lost", false},
		{"context ended after the requests ran", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				const ttl = 2 * time.Second
				fs := newFakes(3)
				m := newManager(t, fs, WithTTL(ttl))
				ctx := context.Background()
				holder, res := holdWithNextInLine(t, m, "k")
				fl, delay := loseReply, time.Duration(0)
				if tc.cancelCtx {
					fl, delay = lateReply, time.Hour // run at once, answer never
				}
				for _, f := range fs {
					f.injectFor(func(name string, _ []string) (fault, time.Duration) {
						if name == "extend" {
							return fl, delay
						}
						return healthy, 0
					})
				}
				ectx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- holder.Extend(ectx, time.Minute) }()
				synctest.Wait() // every node has run the extension
				cancel()
				if err := <-done; err == nil {
					t.Fatal("Extend succeeded; want it to fail with every reply lost")
				}
				for _, f := range fs {
					f.injectFor(nil)
				}
				if n := keptLongerThan(fs, rkey("k"), ttl); n != len(fs) {
					t.Fatalf("%d nodes keep the holder's key longer than %v after the failed Extend; want %d (it ran)", n, ttl, len(fs))
				}
				if err := holder.Unlock(ctx); err != nil {
					t.Fatalf("Unlock = %v", err)
				}
				next := <-res
				if next == nil {
					t.FailNow()
				}
				defer next.Unlock(ctx)
				synctest.Wait() // the requests still due at the quorum run
				if next.secret == holder.secret {
					t.Error("the lock whose Extend failed was handed over")
				}
				if !heldBy(fs, rkey("k"), next.secret) {
					t.Error("the next caller's secret is not on every node")
				}
				if n := keptLongerThan(fs, rkey("k"), ttl); n > 0 {
					t.Errorf("%d nodes keep the receiver's key longer than its TTL %v; want none", n, ttl)
				}
			})
		})
	}
}

// keptLongerThan returns on how many of fs key lives longer than ttl.
func keptLongerThan(fs []*fakeNode, key string, ttl time.Duration) int {
	n := 0
	for _, f := range fs {
		if _, exp, ok := f.get(key); ok && time.Until(exp) > ttl {
			n++
		}
	}
	return n
}

// holdWithNextInLine locks key through m, then starts the next caller's Lock
// of key and waits, in the bubble, until it is in line; the next caller's
// lock comes on the channel returned (nil when its Lock failed, which the
// test reports).
func holdWithNextInLine(t *testing.T, m *Manager, key string) (*Lock, <-chan *Lock) {
	t.Helper()
	ctx := context.Background()
	held, err := m.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan *Lock, 1)
	go func() {
		l, err := m.Lock(ctx, key)
		if err != nil {
			t.Errorf("next caller's Lock = %v", err)
		}
		res <- l
	}()
	synctest.Wait()
	if n := queued(m, rkey(key)); n != 1 {
		t.Fatalf("%d callers in line; want 1", n)
	}
	return held, res
}
