package dlm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestHandOverHonoursReceiverTTL checks that Unlock hands a lock over within
// the manager only to a caller that asked for the same lease — TTL, drift
// factor, node timeout, restart guard, no fencing — and still has the
// validity of its grant, and that every other
// caller obtains the lock from the nodes on its own terms: its validity and
// the keys' TTL on the nodes are at most what its own options give, never
// the holder's longer lease.
func TestHandOverHonoursReceiverTTL(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	const ttl = 2 * time.Second
	m := newWakeManager(t, srvs, dlm.WithTTL(ttl))
	ctx := context.Background()
	for i, tc := range []struct {
		name   string
		opts   []dlm.Option
		ttl    time.Duration // the receiver's
		drift  float64       // the receiver's
		extend time.Duration // the holder extends its lock by this first
		handed bool
	}{
		{"same options", nil, ttl, dlm.DefaultDriftFactor, 0, true},
		{"same options spelled out", []dlm.Option{dlm.WithTTL(ttl), dlm.WithDriftFactor(dlm.DefaultDriftFactor)}, ttl, dlm.DefaultDriftFactor, 0, true},
		{"shorter TTL", []dlm.Option{dlm.WithTTL(200 * time.Millisecond)}, 200 * time.Millisecond, dlm.DefaultDriftFactor, 0, false},
		{"longer TTL", []dlm.Option{dlm.WithTTL(4 * time.Second)}, 4 * time.Second, dlm.DefaultDriftFactor, 0, false},
		{"larger drift factor", []dlm.Option{dlm.WithDriftFactor(0.2)}, ttl, 0.2, 0, false},
		{"other node timeout", []dlm.Option{dlm.WithNodeTimeout(300 * time.Millisecond)}, ttl, dlm.DefaultDriftFactor, 0, false},
		// (Retrying often: the new servers count only once up for the window.)
		{"restart guard", []dlm.Option{dlm.WithRestartGuard(ttl), dlm.WithRetry(0, dlm.FixedBackoff(50*time.Millisecond))}, ttl, dlm.DefaultDriftFactor, 0, false},
		{"fencing", []dlm.Option{dlm.WithFencing()}, ttl, dlm.DefaultDriftFactor, 0, false},
		{"holder extended for longer", nil, ttl, dlm.DefaultDriftFactor, 4 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprint("receiver-", i)
			// A hand-over needs the Unlock within 20 ms of the grant; on a
			// loaded machine the waiter may take longer to line up. Try
			// again then: only a timely Unlock says whether a caller with
			// the same options gets the lock handed over.
			const maxTries = 30
			for try := 0; ; try++ {
				holder, err := m.Lock(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				granted := time.Now()
				res := make(chan lockResult, 1)
				go func() {
					l, err := m.Lock(ctx, key, tc.opts...)
					res <- lockResult{l, err, time.Now()}
				}()
				waitUntil(t, "the receiver in line", func() bool { return dlm.LocalWaiters(m, key) == 1 })
				if tc.extend > 0 {
					if err := holder.Extend(ctx, tc.extend); err != nil {
						t.Fatal(err)
					}
				}
				timely := time.Since(granted) < 15*time.Millisecond
				if err := holder.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				r := <-res
				if r.err != nil {
					t.Fatal(r.err)
				}
				handed := dlm.SameGrant(holder, r.l)
				// The invariant: the receiver's validity is at most what its
				// own TTL, less its own drift allowance, proves from the
				// moment it got the lock, and the nodes keep the key no
				// longer than its TTL.
				drift := time.Duration(float64(tc.ttl)*tc.drift) + 2*time.Millisecond
				if limit := r.at.Add(tc.ttl - drift); r.l.Until().After(limit) {
					t.Errorf("receiver's Until is %v after getting the lock; want at most its TTL %v less its drift %v", r.l.Until().Sub(r.at), tc.ttl, drift)
				}
				for j, s := range srvs {
					v, err := s.Do("PTTL", "redlock:{"+key+"}")
					if err != nil {
						t.Fatal(err)
					}
					if pttl := time.Duration(v.(int64)) * time.Millisecond; pttl > tc.ttl {
						t.Errorf("node %d keeps the receiver's key for %v; want at most its TTL %v", j, pttl, tc.ttl)
					}
				}
				if err := r.l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				// Only a timely Unlock could hand the lock over: a late one
				// says nothing either way, so it is tried again.
				switch {
				case handed && !tc.handed:
					t.Fatal("the lock was handed over to a caller that asked for other options")
				case handed:
					return
				case timely && tc.handed:
					t.Fatal("a timely Unlock did not hand the lock over to a caller with the same options")
				case timely:
					return
				case try == maxTries-1:
					t.Fatalf("in %d tries, the Unlock never came within 15ms of the grant: a hand-over could not be tried", maxTries)
				}
			}
		})
	}
}

// waitUntil polls cond until it holds, or fails the test after 5 seconds,
// or 20 times the latest its own 1ms polling sleeps woke past their time
// where that is more (the timer half of redistest.Pace.Slack, measured on
// the wait itself, for waits with no server at hand: poll measures the
// round trips too).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	var late time.Duration
	for !cond() {
		if waited := time.Since(start); waited > max(5*time.Second, 20*late) {
			t.Fatalf("timed out waiting for %s (%v; timers up to %v late)", what, waited.Round(time.Millisecond), late.Round(time.Microsecond))
		}
		slept := time.Now()
		time.Sleep(time.Millisecond) // polling a condition, not a timing assertion
		late = max(late, time.Since(slept)-time.Millisecond)
	}
}
