//go:build go1.25

// Lock.Extend of an auto-extended lock, on testing/synctest's fake clock
// with fake nodes (see synctest_test.go for the build constraint and
// its go:debug line).

package dlm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// manualExtend is one Extend of an auto-extended lock in
// TestExtendReschedulesAutoExtension.
type manualExtend struct {
	after time.Duration // since the previous step (the grant, for the first)
	ttl   time.Duration
	// during a round: Extend is called while a round's batch carrying the
	// lock is in flight (the nodes take 20ms to run an extension), and
	// waits for it.
	duringRound bool
	// failing: three of the five nodes never answer the Extend, which
	// fails: the validity becomes at most its start + validity(ttl).
	failing bool
	// quiet: no renewal is sent for this long after the Extend returns.
	quiet time.Duration
}

// TestExtendReschedulesAutoExtension checks that Extend, with any TTL,
// reschedules the lock's auto-extension from the validity it leaves: an
// auto-extended lock (TTL 1s) extended by hand to a shorter TTL, a longer
// one, during a round in flight, several times, or by an Extend that
// fails, is renewed in time and never lost on healthy nodes; after a longer
// TTL the next renewal does not come early. Safety first: at every moment
// checked (every 5ms) another manager's TryLock of the key is refused, the
// validity has not run out, and Until is no later than what a quorum of the
// nodes' keys grant.
func TestExtendReschedulesAutoExtension(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	for _, tc := range []struct {
		name  string
		steps []manualExtend
	}{
		{"shorter", []manualExtend{{after: 100 * time.Millisecond, ttl: 400 * time.Millisecond}}},
		{"longer", []manualExtend{{after: 100 * time.Millisecond, ttl: 3 * time.Second, quiet: 2 * time.Second}}},
		{"shorter during a round", []manualExtend{{ttl: 400 * time.Millisecond, duringRound: true}}},
		{"longer during a round", []manualExtend{{ttl: 3 * time.Second, duringRound: true, quiet: 2 * time.Second}}},
		{"repeated shorter", []manualExtend{
			{after: 100 * time.Millisecond, ttl: 400 * time.Millisecond},
			{after: 100 * time.Millisecond, ttl: 400 * time.Millisecond},
			{after: 100 * time.Millisecond, ttl: 300 * time.Millisecond},
		}},
		{"longer then shorter", []manualExtend{
			{after: 100 * time.Millisecond, ttl: 3 * time.Second, quiet: 2 * time.Second},
			{ttl: 400 * time.Millisecond},
		}},
		{"failed shorter", []manualExtend{{after: 100 * time.Millisecond, ttl: 400 * time.Millisecond, failing: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				hook := &recordingHook{}
				m := newManager(t, fs, WithTTL(ttl), WithHook(hook))
				rival := newManager(t, fs, WithTTL(ttl))
				ctx := context.Background()
				l, err := m.TryLock(ctx, "k", WithAutoExtend(AutoExtend{}))
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				// check fails the test at the first moment the lock is
				// lost, its validity ran out, a quorum's keys expire before
				// Until, or the rival obtains the lock.
				check := func() {
					t.Helper()
					synctest.Wait()
					now := time.Now()
					if isClosed(l.Lost()) {
						t.Fatalf("lock lost at start+%v; want it kept; losses %v", now.Sub(start), lossErrs(hook))
					}
					if until := l.Until(); !now.Before(until) {
						t.Fatalf("at start+%v the validity ended (Until start+%v)", now.Sub(start), until.Sub(start))
					} else if exp := quorumExpiry(fs, rkey("k")); until.After(exp) {
						t.Fatalf("at start+%v Until is start+%v, after a quorum's keys expire (start+%v)", now.Sub(start), until.Sub(start), exp.Sub(start))
					}
					if r, err := rival.TryLock(ctx, "k"); !errors.Is(err, ErrNotObtained) {
						r.Unlock(ctx)
						t.Fatalf("at start+%v another manager's TryLock = %v; want ErrNotObtained: two holders", now.Sub(start), err)
					}
				}
				// hold runs d of fake time, checking every 5ms.
				hold := func(d time.Duration) {
					t.Helper()
					for end := time.Now().Add(d); time.Now().Before(end); {
						time.Sleep(min(5*time.Millisecond, time.Until(end)))
						check()
					}
				}
				var mu sync.Mutex
				var arrived time.Time // the last extension's, at the nodes
				slow := func(name string, keys []string) (fault, time.Duration) {
					if name != "extend" {
						return healthy, 0
					}
					mu.Lock()
					arrived = time.Now()
					mu.Unlock()
					return healthy, 20 * time.Millisecond
				}
				for i, s := range tc.steps {
					hold(s.after)
					if s.duringRound {
						for _, f := range fs {
							f.injectFor(slow)
						}
						// The lock's next round: its batch reached the
						// nodes, which answer 20ms later.
						for sent := countAll(fs, "extend"); countAll(fs, "extend") == sent; {
							time.Sleep(time.Millisecond)
							check()
						}
					}
					if s.failing {
						for _, f := range fs[:3] {
							f.inject(hang, 0)
						}
					}
					called := time.Now()
					mu.Lock()
					roundEnds := arrived.Add(20 * time.Millisecond)
					mu.Unlock()
					err := l.Extend(ctx, s.ttl)
					for _, f := range fs {
						f.inject(healthy, 0)
						f.injectFor(nil)
					}
					now, validity := time.Now(), s.ttl-m.cfg.drift(s.ttl)
					sent := now // when Extend's requests left: the nodes answer at once,
					if s.duringRound {
						sent = now.Add(-20 * time.Millisecond) // or after 20ms
					}
					switch {
					case s.failing && !errors.Is(err, ErrUnavailable):
						t.Fatalf("step %d: Extend(%v) with 3 of 5 nodes hanging = %v; want ErrUnavailable", i, s.ttl, err)
					case s.failing && l.Until().After(called.Add(validity)):
						t.Fatalf("step %d: Until() after the failed Extend(%v) = its start+%v; want at most +%v", i, s.ttl, l.Until().Sub(called), validity)
					case !s.failing && err != nil:
						t.Fatalf("step %d: Extend(%v) = %v; want nil", i, s.ttl, err)
					case s.duringRound && !now.Equal(roundEnds.Add(20*time.Millisecond)):
						t.Fatalf("step %d: Extend(%v) during a round returned %v after the round's replies; want 20ms: it waits for them, then for its own", i, s.ttl, now.Sub(roundEnds))
					case !s.failing && !l.Until().Equal(sent.Add(validity)):
						t.Fatalf("step %d: Until() after Extend(%v) = its start+%v; want +%v, Extend's validity", i, s.ttl, l.Until().Sub(sent), validity)
					}
					check()
					if s.quiet > 0 {
						at, sent := time.Now(), countAll(fs, "extend")
						hold(s.quiet)
						if n := countAll(fs, "extend") - sent; n > 0 {
							t.Errorf("step %d: %d renewal requests within %v of Extend(%v) (Until start+%v); want none so early", i, n, s.quiet, s.ttl, l.Until().Sub(start))
						}
						if at.Add(s.quiet).After(l.Until()) {
							t.Fatalf("step %d: quiet for %v past Until; the test wants renewals due later", i, s.quiet)
						}
					}
				}
				sent := countAll(fs, "extend")
				hold(5 * ttl)
				if n := countAll(fs, "extend") - sent; n < 5*len(fs) {
					t.Errorf("%d extension requests in 5 TTLs after the last Extend; want renewals at least once a TTL on every node", n)
				}
				if left, most := time.Until(l.Until()), ttl-m.cfg.drift(ttl); left > most {
					t.Errorf("Until() 5 TTLs after the last Extend = now+%v; want at most +%v: renewals extend by the lock's TTL again", left, most)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("Unlock() = %v; want nil", err)
				}
			})
		})
	}
}

// lossErrs returns the errors of the EventLost h recorded.
func lossErrs(h *recordingHook) []string {
	var out []string
	for _, e := range h.find(EventLost) {
		out = append(out, fmt.Sprint(e.Err))
	}
	return out
}
