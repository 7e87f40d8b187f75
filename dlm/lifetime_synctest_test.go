//go:build go1.25

// Lock lifetime on testing/synctest's fake clock: the Lost signal, the
// auto-extension, and Do. See synctest_test.go for the build
// constraint; its go:debug line, which may appear only once in a package,
// covers this file too.

package dlm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// lostAt waits for l.Lost() and returns how long after start it closed.
func lostAt(l *Lock, start time.Time) time.Duration {
	<-l.Lost()
	return time.Since(start)
}

// TestLostAtValidityEnd checks that without extension, Lost closes exactly
// a loss guard before Until — a twentieth of the validity, at most one node
// timeout — so never after Until, and that the lock then counts as lost.
func TestLostAtValidityEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl, guard time.Duration
	}{
		{100 * time.Millisecond, 4850 * time.Microsecond}, // validity 97ms / 20
		{time.Second, 49400 * time.Microsecond},           // validity 988ms / 20
		{10 * time.Second, 250 * time.Millisecond},        // one node timeout
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m := newManager(t, fs, WithTTL(tc.ttl))
				start := time.Now()
				l, err := m.TryLock(context.Background(), "k")
				if err != nil {
					t.Fatal(err)
				}
				validity := l.Until().Sub(start)
				if got, want := lostAt(l, start), validity-tc.guard; got != want {
					t.Errorf("Lost() closed at start+%v; want start+%v (Until start+%v less the guard %v)", got, want, validity, tc.guard)
				}
				if err := l.Extend(context.Background(), tc.ttl); !errors.Is(err, ErrLockLost) {
					t.Errorf("Extend() after Lost closed = %v; want ErrLockLost", err)
				}
				if got := countAll(fs, "extend"); got != 0 {
					t.Errorf("Extend() after Lost closed sent %d requests; want 0", got)
				}
				if err := l.Unlock(context.Background()); !errors.Is(err, ErrLockLost) {
					t.Errorf("Unlock() after Lost closed = %v; want ErrLockLost", err)
				}
			})
		})
	}
}

// TestLostWhileExtensionHangs checks that the end of the validity is
// signalled on time while an extension is still waiting for slow nodes, and
// that the extension, when it succeeds after the signal, does not take the
// loss back.
func TestLostWhileExtensionHangs(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(time.Second), WithNodeTimeout(900*time.Millisecond))
		start := time.Now()
		l, err := m.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		lost := l.Lost()
		time.Sleep(900 * time.Millisecond)
		for _, f := range fs {
			f.inject(healthy, 800*time.Millisecond) // slow, not dead: the extension succeeds late
		}
		extended := make(chan error, 1)
		go func() { extended <- l.Extend(context.Background(), time.Second) }()
		<-lost
		const guard = 49400 * time.Microsecond // validity 988ms / 20
		if got, want := time.Since(start), l.Until().Sub(start)-guard; got != want {
			t.Errorf("Lost() closed at start+%v with an extension under way; want start+%v, a guard before Until", got, want)
		}
		if err := <-extended; !errors.Is(err, ErrLockLost) {
			t.Errorf("Extend() that succeeded on the nodes after the loss was signalled = %v; want ErrLockLost", err)
		}
		l.Unlock(context.Background())
	})
}

// TestLostRearmedByExtend checks that a Lost channel taken before an Extend
// stays open past the old validity and closes at the new one's guard.
func TestLostRearmedByExtend(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(100*time.Millisecond))
		start := time.Now()
		l, err := m.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		lost := l.Lost()
		oldUntil := l.Until()
		time.Sleep(50 * time.Millisecond)
		if err := l.Extend(context.Background(), 100*time.Millisecond); err != nil {
			t.Fatalf("Extend() = %v", err)
		}
		time.Sleep(time.Until(oldUntil) + time.Millisecond)
		synctest.Wait()
		if isClosed(lost) {
			t.Fatalf("Lost() closed by start+%v, past the old Until start+%v; want it re-armed by Extend", time.Since(start), oldUntil.Sub(start))
		}
		const guard = 4850 * time.Microsecond
		if got, want := lostAt(l, start), l.Until().Sub(start)-guard; got != want || want != 142150*time.Microsecond {
			t.Errorf("Lost() closed at start+%v; want start+%v = 50ms + 97ms validity - %v guard", got, want, guard)
		}
	})
}

// TestLostAlreadyEnded checks that Lost, first taken after the lock ended,
// is closed at once however it ended.
func TestLostAlreadyEnded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(fs []*fakeNode, l *Lock)
	}{
		{"unlocked", func(_ []*fakeNode, l *Lock) { l.Unlock(context.Background()) }},
		{"quorum gone", func(fs []*fakeNode, l *Lock) {
			drop(fs[:3], rkey("k"))
			l.Extend(context.Background(), time.Minute)
		}},
		{"validity passed", func([]*fakeNode, *Lock) { time.Sleep(time.Second) }},
		{"in the guard", func([]*fakeNode, *Lock) { time.Sleep(95 * time.Millisecond) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m := newManager(t, fs, WithTTL(100*time.Millisecond))
				l, err := m.TryLock(context.Background(), "k")
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				tc.end(fs, l)
				if !isClosed(l.Lost()) {
					t.Errorf("Lost() of a lock that ended (%s) is open; want closed at once", tc.name)
				}
				l.Unlock(context.Background())
			})
		})
	}
}

// TestAutoExtendHoldsLock checks that WithAutoExtend keeps a lock for ten
// times its TTL: Until keeps moving forward, Lost stays open, every node
// keeps the key, and an extension is sent about every two thirds of the
// validity (less jitter), bounded by two node timeouts before Until.
func TestAutoExtendHoldsLock(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl = 100 * time.Millisecond
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(ttl))
		start := time.Now()
		l, err := m.Lock(context.Background(), "k", WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		lost := l.Lost()
		until := l.Until()
		for time.Since(start) < 10*ttl {
			time.Sleep(5 * time.Millisecond)
			synctest.Wait()
			if isClosed(lost) {
				t.Fatalf("Lost() closed at start+%v; want open while auto-extended", time.Since(start))
			}
			now := l.Until()
			if !now.After(time.Now()) || now.Before(until) {
				t.Fatalf("at start+%v, Until() = start+%v (was start+%v); want ahead of now, never moving back", time.Since(start), now.Sub(start), until.Sub(start))
			}
			until = now
		}
		if until.Sub(start) <= 10*ttl {
			t.Errorf("after 10×TTL, Until() = start+%v; want past start+%v", until.Sub(start), 10*ttl)
		}
		if !heldBy(fs, rkey("k"), l.secret) {
			t.Errorf("after 10×TTL, nodes hold %q; want the lock's secret everywhere", holders(fs, rkey("k")))
		}
		// Extensions start 57ms (97ms validity - 2×20ms node timeouts)
		// after the last one, less up to a tenth: 17 to 19 in 1s.
		for _, f := range fs {
			if got := f.count("extend"); got < 17 || got > 19 {
				t.Errorf("node %s got %d extend requests in 10×TTL; want 17 to 19", f.Addr(), got)
			}
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock() = %v; want nil", err)
		}
		if !noneHold(fs, rkey("k")) {
			t.Errorf("after Unlock, nodes hold %q; want nothing", holders(fs, rkey("k")))
		}
	})
}

// TestAutoExtendTiming checks when the first extension starts: when
// Remaining of the validity is left (default 1/3), but no later than two node
// timeouts before Until, and at most a tenth of the wait earlier for jitter.
func TestAutoExtendTiming(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opts   []Option
		latest time.Duration // after the lock was obtained, before jitter
	}{
		// TTL 1s: validity 988ms, node timeout 50ms.
		{"default 1/3", []Option{WithAutoExtend(AutoExtend{})}, 658666667 * time.Nanosecond},
		{"Remaining 0.5", []Option{WithAutoExtend(AutoExtend{Remaining: 0.5})}, 494 * time.Millisecond},
		{"Remaining 0.9", []Option{WithAutoExtend(AutoExtend{Remaining: 0.9})}, 98800 * time.Microsecond},
		{"Remaining 0.05, 2 node timeouts", []Option{WithAutoExtend(AutoExtend{Remaining: 0.05})}, 888 * time.Millisecond},
		{"node timeout 200ms", []Option{WithAutoExtend(AutoExtend{}), WithNodeTimeout(200 * time.Millisecond)}, 588 * time.Millisecond},
		// Two node timeouts past the validity: half the wait to 1/3 left.
		{"node timeout 900ms", []Option{WithAutoExtend(AutoExtend{}), WithNodeTimeout(900 * time.Millisecond)}, 329333333 * time.Nanosecond},
		{"TTL 500ms, node timeout 250ms", []Option{WithAutoExtend(AutoExtend{}), WithTTL(500 * time.Millisecond), WithNodeTimeout(250 * time.Millisecond)}, 164333333 * time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				earliest := tc.latest - tc.latest/10
				first, last := time.Duration(1<<62), time.Duration(0)
				for range 20 {
					fs := newFakes(5)
					m, ss := spyManager(t, fs, WithTTL(time.Second))
					start := time.Now()
					l, err := m.Lock(context.Background(), "k", tc.opts...)
					if err != nil {
						t.Fatal(err)
					}
					time.Sleep(tc.latest + time.Millisecond)
					sent := sentTimes(ss, "extend")
					if len(sent) != 5 {
						t.Fatalf("%d extend requests by start+%v; want 5 (one extension)", len(sent), tc.latest+time.Millisecond)
					}
					at := sent[0].Sub(start)
					for _, s := range sent {
						if s.Sub(start) != at {
							t.Errorf("extend requests sent at start+%v and start+%v; want all at once", at, s.Sub(start))
						}
					}
					if at < earliest || at > tc.latest {
						t.Errorf("first extension at start+%v; want within [%v, %v]", at, earliest, tc.latest)
					}
					first, last = min(first, at), max(last, at)
					if err := l.Unlock(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				if first == last {
					t.Errorf("20 first extensions all at start+%v; want jitter", first)
				}
			})
		})
	}
}

// TestAutoExtendShortValidity checks that when two node timeouts take up
// the whole validity, extensions still come at intervals, not back to back
// as fast as the nodes answer, and keep the lock.
func TestAutoExtendShortValidity(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		for _, f := range fs {
			f.inject(healthy, time.Millisecond)
		}
		m := newManager(t, fs, WithTTL(500*time.Millisecond), WithNodeTimeout(250*time.Millisecond))
		l, err := m.Lock(context.Background(), "k", WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		// One every 148ms to 165ms (half of 2/3 of the 493ms validity,
		// less jitter), after the 1ms round trip.
		if got := fs[0].count("extend"); got < 30 || got > 34 {
			t.Errorf("%d extend requests in 5s; want 30 to 34", got)
		}
		if isClosed(l.Lost()) || !heldBy(fs, rkey("k"), l.secret) {
			t.Errorf("after 5s, Lost closed %v, nodes hold %q; want the lock held", isClosed(l.Lost()), holders(fs, rkey("k")))
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock() = %v; want nil", err)
		}
	})
}

// TestAutoExtendRetries checks that extensions failing for a while, less
// than the validity left, are retried until one succeeds: auto-extension does
// not silently stop renewing, and the lock survives. Each failure is logged.
func TestAutoExtendRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault fault
		nodes int // how many of the 5 fail
	}{
		{"3 refuse", refuse, 3},
		{"5 refuse", refuse, 5},
		{"5 hang", hang, 5},
		{"5 error replies", errReply, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				logger, logs := newLogger()
				m := newManager(t, fs, WithTTL(time.Second), WithLogger(logger))
				start := time.Now()
				l, err := m.Lock(context.Background(), "k", WithAutoExtend(AutoExtend{}))
				if err != nil {
					t.Fatal(err)
				}
				lost := l.Lost()
				// The first extension starts within [593ms, 659ms]; the
				// validity ends at 988ms. Fail from 500ms to 850ms: a
				// batch that hangs waits for the nodes half the time
				// its lock has left before its loss guard, at least the
				// node timeout, then is tried again.
				time.Sleep(500 * time.Millisecond)
				for _, f := range fs[:tc.nodes] {
					f.inject(tc.fault, 0)
				}
				time.Sleep(350 * time.Millisecond)
				failed := fs[0].count("extend")
				for _, f := range fs[:tc.nodes] {
					f.inject(healthy, 0)
				}
				if failed < 2 {
					t.Errorf("%d extend requests while the nodes failed; want the first and retries", failed)
				}
				for time.Since(start) < 5*time.Second {
					time.Sleep(10 * time.Millisecond)
					synctest.Wait()
					if isClosed(lost) {
						t.Fatalf("Lost() closed at start+%v; want the lock kept after the nodes recovered", time.Since(start))
					}
				}
				if got := fs[0].count("extend"); got < failed+5 {
					t.Errorf("%d extend requests in 5s, %d during the failure; want renewals to go on", got, failed)
				}
				if !l.Until().After(time.Now()) || !heldBy(fs, rkey("k"), l.secret) {
					t.Errorf("after 5s, Until() = start+%v, nodes hold %q; want a live lock everywhere", l.Until().Sub(start), holders(fs, rkey("k")))
				}
				if !strings.Contains(logs.String(), "event=extend_failed") {
					t.Errorf("no retry logged; log:\n%s", logs)
				}
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("Unlock() = %v; want nil", err)
				}
			})
		})
	}
}

// TestAutoExtendGivesUp checks that when extensions fail past the validity,
// Lost closes a guard before Until, no extension request is sent after that
// (one after Until could revive a lock another client holds by now), and
// Unlock reports the loss.
func TestAutoExtendGivesUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fl   fault
	}{{"refuse", refuse}, {"hang", hang}, {"error reply", errReply}} {
		fl := tc.fl
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m, ss := spyManager(t, fs, WithTTL(time.Second))
				start := time.Now()
				l, err := m.Lock(context.Background(), "k", WithAutoExtend(AutoExtend{}))
				if err != nil {
					t.Fatal(err)
				}
				until := l.Until()
				time.Sleep(500 * time.Millisecond)
				for _, f := range fs {
					f.inject(fl, 0)
				}
				const guard = 49400 * time.Microsecond
				if got, want := lostAt(l, start), until.Sub(start)-guard; got != want {
					t.Errorf("Lost() closed at start+%v; want start+%v, a guard before Until", got, want)
				}
				if got := l.Until(); !got.Equal(until) {
					t.Errorf("Until() moved to start+%v without a successful extension", got.Sub(start))
				}
				time.Sleep(10 * time.Second)
				sent := sentTimes(ss, "extend")
				if len(sent) < 10 {
					t.Errorf("%d extend requests; want the first extension and its retries", len(sent))
				}
				for _, s := range sent {
					if !s.Before(until.Add(-guard)) {
						t.Errorf("extend request sent at start+%v; want none from start+%v on", s.Sub(start), until.Add(-guard).Sub(start))
					}
				}
				if err := l.Unlock(context.Background()); !errors.Is(err, ErrLockLost) {
					t.Errorf("Unlock() = %v; want ErrLockLost", err)
				}
			})
		})
	}
}

// TestAutoExtendQuorumGone checks that when a quorum of nodes loses the key,
// the next extension finds out and Lost closes then, with an error wrapping
// ErrLockLost; a minority losing it does not end the lock.
func TestAutoExtendQuorumGone(t *testing.T) {
	t.Parallel()
	for _, gone := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("%d of 5", gone), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m, ss := spyManager(t, fs, WithTTL(time.Second))
				start := time.Now()
				l, err := m.Lock(context.Background(), "k", WithAutoExtend(AutoExtend{}))
				if err != nil {
					t.Fatal(err)
				}
				lost := l.Lost()
				time.Sleep(100 * time.Millisecond)
				drop(fs[:gone], rkey("k"))
				if gone < quorum(5) {
					time.Sleep(5 * time.Second)
					if isClosed(lost) {
						t.Errorf("Lost() closed with the key gone on %d of 5 nodes; want the lock kept", gone)
					}
					if err := l.Unlock(context.Background()); err != nil {
						t.Errorf("Unlock() = %v; want nil", err)
					}
					return
				}
				at := lostAt(l, start)
				sent := sentTimes(ss, "extend")
				if len(sent) == 0 || sent[0].Sub(start) != at {
					t.Errorf("Lost() closed at start+%v; want at the first extension (sent %v)", at, sent)
				}
				if at >= l.Until().Sub(start) {
					t.Errorf("Lost() closed at start+%v; want before Until start+%v", at, l.Until().Sub(start))
				}
				time.Sleep(5 * time.Second)
				if got := len(sentTimes(ss, "extend")); got != 5 {
					t.Errorf("%d extend requests; want the 5 of the extension that found the lock gone", got)
				}
				err = l.Unlock(context.Background())
				var qerr *QuorumError
				if !errors.Is(err, ErrLockLost) || !errors.As(err, &qerr) || qerr.Op != opExtend || qerr.Against < quorum(5) {
					t.Errorf("Unlock() = %v; want the extension's ErrLockLost with a quorum against", err)
				}
			})
		})
	}
}

// TestAutoExtendMaxHold checks that extension stops at MaxHold: the last
// extension ends the keys' TTL at obtained+MaxHold, Lost closes before it,
// and no extension is sent afterwards.
func TestAutoExtendMaxHold(t *testing.T) {
	t.Parallel()
	for _, maxHold := range []time.Duration{250 * time.Millisecond, 1 * time.Second, 1010 * time.Millisecond} {
		t.Run(maxHold.String(), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				const ttl = 100 * time.Millisecond
				fs := newFakes(5)
				m, ss := spyManager(t, fs, WithTTL(ttl))
				start := time.Now()
				l, err := m.Lock(context.Background(), "k", WithAutoExtend(AutoExtend{MaxHold: maxHold}))
				if err != nil {
					t.Fatal(err)
				}
				at := lostAt(l, start)
				if at > maxHold || at < maxHold-ttl {
					t.Errorf("Lost() closed at start+%v; want within [MaxHold-TTL, MaxHold] = [%v, %v]", at, maxHold-ttl, maxHold)
				}
				if got := l.Until().Sub(start); got > maxHold {
					t.Errorf("Until() = start+%v; want no later than start+MaxHold = %v", got, maxHold)
				}
				time.Sleep(maxHold - time.Millisecond - time.Since(start))
				if !heldBy(fs, rkey("k"), l.secret) {
					t.Errorf("at start+MaxHold-1ms, nodes hold %q; want the last extension to reach MaxHold", holders(fs, rkey("k")))
				}
				time.Sleep(time.Millisecond)
				if !noneHold(fs, rkey("k")) {
					t.Errorf("at start+MaxHold, nodes hold %q; want the keys expired", holders(fs, rkey("k")))
				}
				sent := sentTimes(ss, "extend")
				time.Sleep(10 * time.Second)
				if got := sentTimes(ss, "extend"); len(got) != len(sent) {
					t.Errorf("%d extend requests after MaxHold; want none", len(got)-len(sent))
				}
				if limit := 5 * int(maxHold/(50*time.Millisecond)+1); len(sent) > limit {
					t.Errorf("%d extend requests within MaxHold %v; want at most %d", len(sent), maxHold, limit)
				}
				if err := l.Unlock(context.Background()); !errors.Is(err, ErrLockLost) {
					t.Errorf("Unlock() after MaxHold = %v; want ErrLockLost", err)
				}
			})
		})
	}
}

// TestAutoExtendStopsOnUnlock checks that Unlock stops auto-extension even
// with an extension in flight: no extend request is sent after Unlock
// returns, and no key is left on any node (a renewal racing with the unlock
// must not keep a released lock alive).
func TestAutoExtendStopsOnUnlock(t *testing.T) {
	t.Parallel()
	for _, stubborn := range []bool{false, true} {
		t.Run(fmt.Sprintf("stubborn=%v", stubborn), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m, ss := spyManager(t, fs, WithTTL(time.Second))
				inFlight := make(chan struct{}, 5)
				for _, s := range ss {
					s.onExtend = func() {
						select {
						case inFlight <- struct{}{}:
						default:
						}
					}
					s.stubborn = stubborn
				}
				l, err := m.Lock(context.Background(), "k", WithAutoExtend(AutoExtend{}))
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					f.inject(healthy, 30*time.Millisecond)
				}
				<-inFlight // an extension was sent; its reply takes 30ms
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("Unlock() with an extension in flight = %v; want nil", err)
				}
				if !isClosed(l.Lost()) {
					t.Error("Lost() open after Unlock")
				}
				sent := len(sentTimes(ss, "extend"))
				if !noneHold(fs, rkey("k")) {
					t.Errorf("after Unlock, nodes hold %q; want nothing", holders(fs, rkey("k")))
				}
				time.Sleep(10 * time.Second)
				if got := len(sentTimes(ss, "extend")); got != sent {
					t.Errorf("%d extend requests after Unlock returned; want 0", got-sent)
				}
				if !noneHold(fs, rkey("k")) {
					t.Errorf("10s after Unlock, nodes hold %q; want nothing", holders(fs, rkey("k")))
				}
			})
		})
	}
}

// TestAutoExtendStopsWithClose checks that the context given to Lock bounds
// only the wait: once it ends, auto-extension goes on; Manager.Close
// stops it, after which no extension is sent and Lost closes at the
// validity's guard.
func TestAutoExtendStopsWithClose(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m, ss := spyManager(t, fs, WithTTL(time.Second))
		ctx, cancel := context.WithCancel(context.Background())
		l, err := m.Lock(ctx, "k", WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		time.Sleep(5 * time.Second)
		sent := len(sentTimes(ss, "extend"))
		if sent < 5*5 || isClosed(l.Lost()) || !heldBy(fs, rkey("k"), l.secret) {
			t.Fatalf("5s after Lock's context ended: %d extend requests, Lost closed %v, nodes hold %q; want the lock extended about every 650ms",
				sent, isClosed(l.Lost()), holders(fs, rkey("k")))
		}
		m.Close()
		closed := time.Now()
		const guard = 49400 * time.Microsecond
		if got, want := lostAt(l, closed), l.Until().Sub(closed)-guard; got != want {
			t.Errorf("Lost() closed at Close+%v; want Close+%v, a guard before Until", got, want)
		}
		time.Sleep(10 * time.Second)
		if got := len(sentTimes(ss, "extend")); got != sent {
			t.Errorf("%d extend requests after Close; want 0", got-sent)
		}
		if !noneHold(fs, rkey("k")) {
			t.Errorf("nodes hold %q; want the keys expired", holders(fs, rkey("k")))
		}
	})
}

// TestDoLockLost checks that fn's context is cancelled when the lock is
// lost — found gone on a quorum by an extension, or its validity running out
// while extensions keep failing — before the validity ends, with a cause
// wrapping ErrLockLost; and that Do's error then wraps both ErrLockLost and
// fn's error.
func TestDoLockLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		lose  func(fs []*fakeNode)
		fnErr error
	}{
		{"quorum gone", func(fs []*fakeNode) { drop(fs[:3], rkey("job")) }, errWork},
		{"quorum gone, fn returns nil", func(fs []*fakeNode) { drop(fs[:3], rkey("job")) }, nil},
		{"nodes refuse", func(fs []*fakeNode) {
			for _, f := range fs {
				f.inject(refuse, 0)
			}
		}, errWork},
		{"nodes hang", func(fs []*fakeNode) {
			for _, f := range fs {
				f.inject(hang, 0)
			}
		}, errWork},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m, ss := spyManager(t, fs, WithTTL(time.Second))
				start := time.Now()
				var cancelledAt, until time.Duration
				err := m.Do(context.Background(), "job", func(ctx context.Context) error {
					time.Sleep(100 * time.Millisecond)
					tc.lose(fs)
					<-ctx.Done()
					cancelledAt = time.Since(start)
					until = LockFromContext(ctx).Until().Sub(start)
					if cause := context.Cause(ctx); !errors.Is(cause, ErrLockLost) {
						t.Errorf("context.Cause(fn's ctx) = %v; want ErrLockLost", cause)
					}
					return tc.fnErr
				})
				if cancelledAt >= until {
					t.Errorf("fn's ctx cancelled at start+%v; want before Until start+%v", cancelledAt, until)
				}
				if first := sentTimes(ss, "extend"); len(first) == 0 || first[0].Sub(start) > cancelledAt {
					t.Errorf("fn's ctx cancelled at start+%v, before any extension (%v)", cancelledAt, first)
				}
				if !errors.Is(err, ErrLockLost) {
					t.Errorf("Do() = %v; want ErrLockLost", err)
				}
				if tc.fnErr != nil && !errors.Is(err, tc.fnErr) {
					t.Errorf("Do() = %v; want it to wrap fn's error %v too", err, tc.fnErr)
				}
				time.Sleep(time.Second) // past the TTL
				if !noneHold(fs, rkey("job")) {
					t.Errorf("after Do, nodes hold %q; want nothing", holders(fs, rkey("job")))
				}
			})
		})
	}
}

// TestDoOutlivesTTL checks that Do keeps the lock while fn runs ten times
// the TTL, with fn's context live throughout, and releases it after.
func TestDoOutlivesTTL(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl = 100 * time.Millisecond
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(ttl))
		err := m.Do(context.Background(), "job", func(ctx context.Context) error {
			secret := LockFromContext(ctx).secret
			for range 100 {
				time.Sleep(ttl / 10)
				if ctx.Err() != nil || !heldBy(fs, rkey("job"), secret) {
					return fmt.Errorf("lock not held at %v: ctx %v, nodes %q", time.Now(), context.Cause(ctx), holders(fs, rkey("job")))
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("Do(fn running 10×TTL) = %v; want nil", err)
		}
		if !noneHold(fs, rkey("job")) {
			t.Errorf("after Do, nodes hold %q; want nothing", holders(fs, rkey("job")))
		}
	})
}

// TestDoCallerCancels checks that cancelling Do's context cancels fn's
// context (with the caller's cause, not a loss), stops extension and
// releases the lock.
func TestDoCallerCancels(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m, ss := spyManager(t, fs, WithTTL(100*time.Millisecond))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		err := m.Do(ctx, "job", func(ctx context.Context) error {
			<-ctx.Done()
			if d := time.Since(start); d != 300*time.Millisecond {
				t.Errorf("fn's ctx done at start+%v; want start+300ms", d)
			}
			if cause := context.Cause(ctx); cause != context.Canceled {
				t.Errorf("context.Cause(fn's ctx) = %v; want context.Canceled", cause)
			}
			return fmt.Errorf("stopped: %w", ctx.Err())
		})
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrLockLost) {
			t.Errorf("Do() = %v; want fn's error wrapping context.Canceled only", err)
		}
		if !noneHold(fs, rkey("job")) {
			t.Errorf("after Do, nodes hold %q; want nothing", holders(fs, rkey("job")))
		}
		sent := len(sentTimes(ss, "extend"))
		if sent == 0 {
			t.Error("no extension in 300ms of a 100ms TTL")
		}
		time.Sleep(10 * time.Second)
		if got := len(sentTimes(ss, "extend")); got != sent {
			t.Errorf("%d extend requests after Do returned; want 0", got-sent)
		}
	})
}

// TestResumeAutoExtend checks that WithAutoExtend on Resume keeps the
// handed-over lock extended in the receiving Manager until Unlock.
func TestResumeAutoExtend(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl = 100 * time.Millisecond
		fs := newFakes(5)
		m1 := newManager(t, fs, WithTTL(ttl))
		m2 := newManager(t, fs, WithTTL(ttl))
		orig, err := m1.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl / 2)
		l, err := m2.Resume(context.Background(), orig.Handle(), WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatalf("Resume() = %v", err)
		}
		time.Sleep(10 * ttl)
		if isClosed(l.Lost()) || !l.Until().After(time.Now()) || !heldBy(fs, rkey("k"), l.secret) {
			t.Errorf("10×TTL after Resume with auto-extension: Lost closed %v, Until now%+v, nodes hold %q; want the lock held",
				isClosed(l.Lost()), time.Until(l.Until()), holders(fs, rkey("k")))
		}
		if got := countAll(fs, "extend"); got < 5*10 {
			t.Errorf("%d extend requests in 10×TTL; want an extension about every 57ms", got)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock() = %v; want nil", err)
		}
		if !noneHold(fs, rkey("k")) {
			t.Errorf("after Unlock, nodes hold %q; want nothing", holders(fs, rkey("k")))
		}
	})
}

// TestCloseStopsAutoExtension checks that Manager.Close stops the
// auto-extension of the locks it still holds, obtained or resumed: no
// extension is sent after Close returned, and the extender's goroutine
// ends with it (the bubble ends with no goroutine left).
func TestCloseStopsAutoExtension(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		m := newManager(t, fs, WithTTL(time.Second))
		if _, err := m.Lock(context.Background(), "a", WithAutoExtend(AutoExtend{})); err != nil {
			t.Fatal(err)
		}
		orig, err := m.TryLock(context.Background(), "b")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Resume(context.Background(), orig.Handle(), WithAutoExtend(AutoExtend{})); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		before := countAll(fs, "extend")
		if before == 0 {
			t.Fatalf("no extension in the 2s before Close; want the locks kept extended")
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if got := countAll(fs, "extend"); got != before {
			t.Errorf("%d extend requests after Close; want none", got-before)
		}
	})
}
