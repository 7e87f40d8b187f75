//go:build go1.25

// Timing tests on testing/synctest's fake clock (Go 1.25+), with fake nodes
// that delay or never answer. The build constraint keeps the module's go
// 1.22 line honest: older toolchains build the package without these tests.
// synctest needs the Go 1.23 timer channels, which a go 1.22 module turns
// off by default; the go:debug line turns them on for this test binary.

//go:debug asynctimerchan=0

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

// inBubble runs f in a synctest bubble. Before the bubble ends, its clock
// runs an hour on, so that requests and releases still under way in the
// background reach their deadlines; one that never ends fails the test as a
// deadlock.
func inBubble(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Hour)
		f(t)
	})
}

// elapsed runs f and returns how much fake time it took.
func elapsed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// TestValidity checks Until = start + ttl - drift, with drift = ttl×factor +
// 2ms, whatever the round trip took, and that a quorum answering after the
// validity is used up does not obtain the lock.
func TestValidity(t *testing.T) {
	t.Parallel()
	const ttl = 100 * time.Millisecond
	drift := ttl/100 + 2*time.Millisecond // 3ms
	for _, delay := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond, 96 * time.Millisecond, 97 * time.Millisecond, 98 * time.Millisecond, 99*time.Millisecond - time.Microsecond} {
		t.Run(fmt.Sprint(delay), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				for _, f := range fs {
					f.inject(healthy, delay)
				}
				m := newManager(t, fs, WithTTL(ttl), WithNodeTimeout(99*time.Millisecond))
				start := time.Now()
				l, err := m.TryLock(context.Background(), "k")
				if delay < ttl-drift { // validity = ttl - delay - drift > 0
					if err != nil {
						t.Fatalf("TryLock(%q) with replies after %v = %v; want a lock", "k", delay, err)
					}
					if got, want := l.Until(), start.Add(ttl-drift); !got.Equal(want) {
						t.Errorf("Until() = start+%v; want start+%v", got.Sub(start), want.Sub(start))
					}
					// The nodes set the key when the request reached them.
					synctest.Wait()
					if _, exp, _ := fs[0].get(rkey("k")); !exp.Equal(start.Add(delay + ttl)) {
						t.Errorf("key expires at start+%v; want start+%v", exp.Sub(start), delay+ttl)
					}
					return
				}
				var qerr *QuorumError
				if l != nil || !errors.Is(err, ErrNotObtained) || !errors.As(err, &qerr) || !qerr.Expired || qerr.For < quorum(5) {
					t.Fatalf("TryLock(%q) with replies after %v = %v, %v; want ErrNotObtained, Expired, a quorum for", "k", delay, l, err)
				}
				if !strings.Contains(err.Error(), "validity used up") {
					t.Errorf("TryLock error %q does not say the validity was used up", err)
				}
				time.Sleep(time.Minute)
				for _, f := range fs {
					if got := f.count("release"); got != 1 {
						t.Errorf("node %s ran release %d times; want 1", f.Addr(), got)
					}
				}
				if got := holders(fs, rkey("k")); strings.Join(got, "") != "" {
					t.Errorf("after the expired attempt, nodes hold %q; want nothing", got)
				}
			})
		})
	}
}

// TestFailFast checks that an attempt that cannot reach a quorum returns as
// soon as that is known: with 3 of 5 nodes refusing and 2 hanging, TryLock
// does not wait for the hanging ones' timeout. Those are released in the
// background, each as soon as its acquire request timed out (not before,
// lest the release overtake it): nodes that never answered, waited for as
// long as the cap of the learned node timeout, 1 s for the default TTL.
func TestFailFast(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		for i, f := range fs {
			if i%2 == 0 {
				f.inject(refuse, 0)
			} else {
				f.inject(hang, 0)
			}
		}
		m := newManager(t, fs) // node timeout 250ms – 1s
		start := time.Now()
		var err error
		if d := elapsed(func() { _, err = m.TryLock(context.Background(), "k") }); d != 0 {
			t.Errorf("TryLock with 3 nodes refusing took %v; want 0 (no wait for the hanging nodes)", d)
		}
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("TryLock = %v; want ErrUnavailable", err)
		}
		const timeout = time.Second
		for _, at := range []time.Duration{0, timeout - time.Millisecond, timeout + time.Millisecond} {
			time.Sleep(at - time.Since(start))
			synctest.Wait()
			for i, f := range fs {
				got := f.count("release")
				switch {
				case i%2 == 0 && at == 0 && got != 1:
					t.Errorf("at %v, node %s ran release %d times; want 1 (a refusing node is released at once)", at, f.Addr(), got)
				case i%2 == 0 && got < 1:
					// Later ones are the release retried, since it fails
					// there too (rerelease.go).
					t.Errorf("at %v, node %s ran release %d times; want at least 1", at, f.Addr(), got)
				case i%2 == 1 && at < timeout && got != 0:
					t.Errorf("at %v, node %s ran release %d times; want 0 before its acquire timed out", at, f.Addr(), got)
				case i%2 == 1 && at > timeout && got != 1:
					t.Errorf("at %v, node %s ran release %d times; want 1 once its acquire timed out", at, f.Addr(), got)
				}
			}
		}
	})
}

// TestSlowMinority checks that a slow minority does not delay a success, and
// that an Unlock right after it waits for the slow nodes' acquire requests,
// so that no late request leaves the key behind.
func TestSlowMinority(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		fs[1].inject(healthy, 40*time.Millisecond)
		fs[3].inject(healthy, 40*time.Millisecond)
		m := newManager(t, fs)
		var l *Lock
		var err error
		if d := elapsed(func() { l, err = m.TryLock(context.Background(), "k") }); err != nil || d != 0 {
			t.Fatalf("TryLock with 2 slow nodes = %v after %v; want a lock at once", err, d)
		}
		// Once the slow acquires are under way, a release would reach
		// those nodes before them.
		synctest.Wait()
		fs[1].inject(healthy, 0)
		fs[3].inject(healthy, 0)
		if d := elapsed(func() { err = l.Unlock(context.Background()) }); err != nil || d != 40*time.Millisecond {
			t.Errorf("Unlock() = %v after %v; want nil after 40ms (the slow acquires)", err, d)
		}
		if got := holders(fs, rkey("k")); strings.Join(got, "") != "" {
			t.Errorf("after Unlock, nodes hold %q; want nothing", got)
		}
	})
}

// TestNodeTimeout checks that the node timeout bounds acquire, extend and
// release alike, and its default: a twentieth of the TTL within [20ms,
// 250ms], unless WithNodeTimeout sets it. The default is the floor of the
// nodes' learned timeout: a release that timed out doubles it for the next
// attempt (backed off), and that attempt's timeouts double it again, up to
// its cap, for the background release; WithNodeTimeout's stays fixed.
func TestNodeTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts      []Option
		ttl       time.Duration
		want      time.Duration
		backedOff time.Duration // of the attempt after the release timed out
		capped    time.Duration // of the background release after it
	}{
		{nil, DefaultTTL, 250 * time.Millisecond, 500 * time.Millisecond, time.Second},
		{[]Option{WithTTL(time.Hour)}, time.Hour, 250 * time.Millisecond, 500 * time.Millisecond, time.Second},
		{[]Option{WithTTL(2 * time.Second)}, 2 * time.Second, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond},
		{[]Option{WithTTL(100 * time.Millisecond)}, 100 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond},
		{[]Option{WithNodeTimeout(30 * time.Millisecond)}, DefaultTTL, 30 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond},
		{[]Option{WithTTL(100 * time.Millisecond), WithNodeTimeout(70 * time.Millisecond)}, 100 * time.Millisecond, 70 * time.Millisecond, 70 * time.Millisecond, 70 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("ttl=%v/want=%v", tc.ttl, tc.want), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(3)
				m := newManager(t, fs, asManager(tc.opts)...)
				ctx := context.Background()
				l, err := m.TryLock(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				for _, f := range fs {
					f.inject(hang, 0)
				}
				if d := elapsed(func() { err = l.Extend(ctx, tc.ttl) }); d != tc.want {
					t.Errorf("Extend on hanging nodes took %v; want %v", d, tc.want)
				}
				if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Extend on hanging nodes = %v; want ErrUnavailable from node timeouts", err)
				}
				if d := elapsed(func() { err = l.Unlock(ctx) }); d != tc.want {
					t.Errorf("Unlock on hanging nodes took %v; want %v", d, tc.want)
				}
				if !errors.Is(err, ErrUnavailable) {
					t.Errorf("Unlock on hanging nodes = %v; want ErrUnavailable", err)
				}
				// An attempt waits for its acquire; the release of nodes
				// that failed runs in the background, bounded by the node
				// timeout as well.
				// The Unlock's releases are retried meanwhile; they
				// are not the attempt's.
				before := countAll(fs, "release")
				if d := elapsed(func() { _, err = m.TryLock(ctx, "k2") }); d != tc.backedOff {
					t.Errorf("TryLock on hanging nodes took %v; want %v", d, tc.backedOff)
				}
				if !errors.Is(err, ErrUnavailable) {
					t.Errorf("TryLock on hanging nodes = %v; want ErrUnavailable", err)
				}
				if d := elapsed(func() { m.Close() }); d != tc.capped {
					t.Errorf("Close waited %v for the background release; want %v", d, tc.capped)
				}
				if got := countAll(fs, "release") - before - int(m.rereleases.resent.Load()); got != len(fs) {
					t.Errorf("%d release requests after the failed attempt; want one per node (%d)", got, len(fs))
				}
			})
		})
	}
}

// TestNodeErrorsInNodeOrder checks that node errors are listed in the order
// the nodes were given, not the order they answered in.
func TestNodeErrorsInNodeOrder(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		for i, f := range fs {
			f.inject(refuse, time.Duration(5-i)*time.Millisecond) // fake-4 answers first
		}
		m := newManager(t, fs)
		_, err := m.TryLock(context.Background(), "k")
		var got []string
		for _, e := range nodeErrors(err) {
			got = append(got, e.Node)
		}
		// The attempt stops once 3 failed: fake-4, fake-3, fake-2.
		if want := "[fake-2 fake-3 fake-4]"; fmt.Sprint(got) != want {
			t.Errorf("TryLock(%q) = %v: node errors for %v; want %s", "k", err, got, want)
		}
		var nerr *NodeError
		if !errors.As(err, &nerr) || nerr.Node != "fake-2" {
			t.Errorf("errors.As(TryLock error) = %v; want fake-2's", nerr)
		}
	})
}

// TestOutcomeIndependentOfReplyOrder checks that whether a failed attempt is
// ErrUnavailable or ErrNotObtained does not depend on which nodes answer
// first: failures beyond tolerance make it ErrUnavailable even when the
// nodes held by another client answer before them.
func TestOutcomeIndependentOfReplyOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		states string
		want   error
	}{
		{"HHRRR", ErrUnavailable},
		{"HRRRH", ErrUnavailable},
		{"HHHRR", ErrNotObtained},
		{"HHyRR", ErrNotObtained},
		{"HyRRR", ErrUnavailable},
	} {
		for _, first := range []byte{'H', 'R'} {
			t.Run(fmt.Sprintf("%s/%c_first", tc.states, first), func(t *testing.T) {
				inBubble(t, func(t *testing.T) {
					fs := newFakes(5)
					setUp(fs, "k", tc.states)
					for i, f := range fs {
						if tc.states[i] != first {
							f.inject(f.fault, time.Millisecond) // keep its fault, answer later
						}
					}
					m := newManager(t, fs)
					_, err := m.TryLock(context.Background(), "k")
					if !errors.Is(err, tc.want) {
						t.Errorf("TryLock(%q) = %v; want %v", "k", err, tc.want)
					}
				})
			})
		}
	}
}

// TestUnlockAfterValidity checks that Unlock after the validity ended
// reports ErrLockLost, and still deletes keys that had not yet expired.
func TestUnlockAfterValidity(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{97 * time.Millisecond, 99 * time.Millisecond, 150 * time.Millisecond} {
		t.Run(fmt.Sprint(wait), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m := newManager(t, fs, WithTTL(100*time.Millisecond)) // validity 97ms
				l, err := m.TryLock(context.Background(), "k")
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(wait)
				if err := l.Unlock(context.Background()); !errors.Is(err, ErrLockLost) {
					t.Errorf("Unlock() %v after TryLock = %v; want ErrLockLost", wait, err)
				}
				if got := holders(fs, rkey("k")); strings.Join(got, "") != "" {
					t.Errorf("after Unlock, nodes hold %q; want nothing", got)
				}
				if wait < 100*time.Millisecond && countAll(fs, "release") != 5 {
					t.Errorf("Unlock sent %d releases; want 5", countAll(fs, "release"))
				}
			})
		})
	}
}

// TestExtendMovesUntil checks that Extend sets Until to the extension's
// start (before the round trip) + ttl - drift, and the keys' TTL to ttl.
func TestExtendMovesUntil(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(time.Second))
		l, err := m.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		for _, f := range fs {
			f.inject(healthy, 5*time.Millisecond)
		}
		start := time.Now()
		if err := l.Extend(context.Background(), 2*time.Second); err != nil {
			t.Fatalf("Extend(2s) = %v; want nil", err)
		}
		if got, want := l.Until(), start.Add(2*time.Second-22*time.Millisecond); !got.Equal(want) {
			t.Errorf("Until() after Extend(2s) = start+%v; want start+%v", got.Sub(start), want.Sub(start))
		}
		synctest.Wait()
		for _, f := range fs {
			if _, exp, _ := f.get(rkey("k")); !exp.Equal(start.Add(5*time.Millisecond + 2*time.Second)) {
				t.Errorf("node %s: key expires at start+%v; want start+2.005s", f.Addr(), exp.Sub(start))
			}
		}
		// Past the old TTL, the lock is still held.
		time.Sleep(time.Second)
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock() = %v; want nil", err)
		}
	})
}

// TestExtendAfterValidity checks that Extend after the local validity ended
// fails with ErrLockLost without sending anything, and recreates no key.
func TestExtendAfterValidity(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(100*time.Millisecond))
		l, err := m.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(97 * time.Millisecond) // the validity: 100ms - 3ms
		if err := l.Extend(context.Background(), time.Minute); !errors.Is(err, ErrLockLost) {
			t.Errorf("Extend() at the end of the validity = %v; want ErrLockLost", err)
		}
		if got := countAll(fs, "extend"); got != 0 {
			t.Errorf("Extend() sent %d requests; want 0", got)
		}
		time.Sleep(3 * time.Millisecond)
		if got := holders(fs, rkey("k")); strings.Join(got, "") != "" {
			t.Errorf("after the TTL, nodes hold %q; want nothing", got)
		}
		if err := l.Extend(context.Background(), time.Minute); !errors.Is(err, ErrLockLost) || countAll(fs, "extend") != 0 {
			t.Errorf("second Extend() = %v; want ErrLockLost without a request", err)
		}
	})
}

// TestPerCallTTL checks that WithTTL on a call overrides the manager's
// default in the PX sent to the nodes and in the validity.
func TestPerCallTTL(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		m := newManager(t, fs, WithTTL(10*time.Second))
		start := time.Now()
		for _, tc := range []struct {
			key  string
			opts []Option
			ttl  time.Duration
		}{
			{"default", nil, 10 * time.Second},
			{"override", []Option{WithTTL(5 * time.Second)}, 5 * time.Second},
			{"sub-millisecond", []Option{WithTTL(5*time.Second + 999*time.Microsecond)}, 5 * time.Second},
		} {
			l, err := m.TryLock(context.Background(), tc.key, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			for _, f := range fs {
				if _, exp, _ := f.get(rkey(tc.key)); !exp.Equal(start.Add(tc.ttl)) {
					t.Errorf("TryLock(%q): node %s key expires at start+%v; want start+%v", tc.key, f.Addr(), exp.Sub(start), tc.ttl)
				}
			}
			if l.Until().After(start.Add(tc.ttl)) {
				t.Errorf("TryLock(%q): Until() = start+%v, after the keys expire (start+%v)", tc.key, l.Until().Sub(start), tc.ttl)
			}
		}
	})
}

// TestLockRetries checks that Lock makes exactly the number of attempts
// WithRetry allows, waiting a jittered backoff between them, and returns an
// error wrapping ErrNotObtained.
func TestLockRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		tries    int
		backoff  Backoff
		min, max time.Duration // of the total wait: half to all of the backoffs' sum
	}{
		{"fixed", 3, FixedBackoff(100 * time.Millisecond), 100 * time.Millisecond, 200 * time.Millisecond},
		{"linear", 4, LinearBackoff(10*time.Millisecond, 25*time.Millisecond), 27500 * time.Microsecond, 55 * time.Millisecond},
		{"exponential", 5, ExponentialBackoff(10*time.Millisecond, 40*time.Millisecond), 55 * time.Millisecond, 110 * time.Millisecond},
		{"once", 1, FixedBackoff(time.Hour), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				setUp(fs, "k", "HHHHH")
				m := newManager(t, fs, WithRetry(tc.tries, tc.backoff))
				var err error
				d := elapsed(func() { _, err = m.Lock(context.Background(), "k") })
				var qerr *QuorumError
				if !errors.Is(err, ErrNotObtained) || !errors.As(err, &qerr) {
					t.Errorf("Lock(%q) = %v; want ErrNotObtained", "k", err)
				}
				if tc.tries > 1 && !strings.Contains(err.Error(), fmt.Sprintf("after %d attempts", tc.tries)) {
					t.Errorf("Lock(%q) = %v; want it to say after %d attempts", "k", err, tc.tries)
				}
				if d < tc.min || d > tc.max {
					t.Errorf("Lock(%q) gave up after %v; want within [%v, %v]", "k", d, tc.min, tc.max)
				}
				synctest.Wait()
				for _, f := range fs {
					if got := f.count("acquire"); got != tc.tries {
						t.Errorf("node %s got %d acquire requests; want %d", f.Addr(), got, tc.tries)
					}
				}
			})
		})
	}
}

// TestLockContextEnds checks that a Lock whose context ends while waiting
// returns at once with the context's error, which keeps the class of its
// last attempt: ErrNotObtained, not ErrUnavailable.
func TestLockContextEnds(t *testing.T) {
	t.Parallel()
	for _, cancel := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel=%v", cancel), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				setUp(fs, "k", "HHHyy")
				m := newManager(t, fs, WithRetry(0, FixedBackoff(time.Second)))
				ctx, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer stop()
				want := context.DeadlineExceeded
				if cancel {
					want = context.Canceled
					go func() {
						time.Sleep(30 * time.Millisecond)
						stop()
					}()
				}
				var err error
				d := elapsed(func() { _, err = m.Lock(ctx, "k") })
				if !errors.Is(err, want) || !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrUnavailable) {
					t.Errorf("Lock(%q) = %v; want %v and ErrNotObtained", "k", err, want)
				}
				if wantD := map[bool]time.Duration{false: 50 * time.Millisecond, true: 30 * time.Millisecond}[cancel]; d != wantD {
					t.Errorf("Lock(%q) returned after %v; want %v", "k", d, wantD)
				}
				if got := countAll(fs, "acquire"); got != 5 {
					t.Errorf("%d acquire requests; want 5 (one attempt)", got)
				}
			})
		})
	}
}

// TestLockObtainedAfterRelease checks that a waiting Lock obtains the lock
// after the holder releases it, within one backoff: nodes that announce no
// releases leave the retries to find it free.
func TestLockObtainedAfterRelease(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs, WithRetry(0, FixedBackoff(100*time.Millisecond)))
		held, err := m.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := make(chan time.Duration)
		go func() {
			l, err := m.Lock(context.Background(), "k")
			if err != nil {
				t.Errorf("waiting Lock(%q) = %v; want a lock", "k", err)
				got <- -1
				return
			}
			got <- time.Since(start)
			if err := l.Unlock(context.Background()); err != nil {
				t.Errorf("Unlock() = %v", err)
			}
		}()
		time.Sleep(250 * time.Millisecond)
		if err := held.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := <-got; d < 250*time.Millisecond || d > 350*time.Millisecond {
			t.Errorf("waiting Lock obtained the lock after %v; want within a backoff of the release at 250ms", d)
		}
	})
}
