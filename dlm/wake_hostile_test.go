package dlm_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// Payloads any client allowed to publish on a wake channel can send.
var (
	// overflowingCounts are releases whose counts, times an attempt's
	// duration, overflow: for 2^59+2, to a product that is not positive for
	// about half of all attempts. Waiters read them, capped.
	overflowingCounts = []string{"r" + strings.Repeat("9", 18), "r922337203685477580", "r576460752303423490"}
	// malformedWakes are negative and malformed counts, counts too long to
	// be one, garbage of a fair waiter id's length, bytes that are not
	// ASCII and a long payload. Waiters ignore them.
	malformedWakes = []string{
		"r-9223372036854775808", "r-1", "r", "r+5", "r0x10", "r" + strings.Repeat("9", 40), "r99999999999999999999",
		"\xff\xfe\xfd", "r\u0661\u0662", "not a waiter's id!!!!!", strings.Repeat("x", 1<<16),
	}
)

// TestWakePublishCannotCrashWaiter publishes hostile payloads on the wake
// channels of a key, on every node, as any client may. A reader waits on
// the key's broadcast channel: releases with overflowing counts wake it into
// another attempt each, and must not make it panic. A waiter of the mutex
// waits on its manager's channel, where the releases name it: payloads that
// are no waiter id of that manager (releases, grants, another manager's ids,
// garbage) wake nobody and are counted. Malformed payloads are ignored and
// counted on both, and the real release still wakes each waiter.
func TestWakePublishCannotCrashWaiter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// wait waits for key, held by the writer, on m.
		wait func(ctx context.Context, m *dlm.Manager, key string) (*dlm.Lock, error)
		// channel is the pattern of the channel the waiter listens on.
		channel string
		// counts are published to wake the waiter into attempts; the
		// others must not.
		counts  bool
		hostile []string
	}{
		{"reader", func(ctx context.Context, m *dlm.Manager, key string) (*dlm.Lock, error) { return m.RLock(ctx, key) },
			"redlock:{%s}:wake", true, malformedWakes},
		{"mutex waiter", func(ctx context.Context, m *dlm.Manager, key string) (*dlm.Lock, error) { return m.Lock(ctx, key) },
			"redlock:{%s}:wake:*", false, append(slices.Clone(malformedWakes), "", "t", "r5", "r"+strings.Repeat("9", 18),
				strings.Repeat("O", 11)+strings.Repeat("w", 11))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, 3)
			attempts := &attemptCounter{}
			const nodeTimeout = 200 * time.Millisecond
			holderM, waiterM := newWakeManager(t, srvs), newWakeManager(t, srvs, dlm.WithHook(attempts), dlm.WithNodeTimeout(nodeTimeout))
			ctx := context.Background()
			key := "hostile-" + strings.ReplaceAll(tc.name, " ", "-")
			held, err := holderM.Lock(ctx, key, dlm.WithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			res := make(chan lockResult, 1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						res <- lockResult{err: fmt.Errorf("panic in the wait: %v", p), at: time.Now()}
					}
				}()
				l, err := tc.wait(ctx, waiterM, key)
				res <- lockResult{l, err, time.Now()}
			}()
			awaitListening(t, srvs, key)
			attempts.awaitQuiet(t, 3*nodeTimeout, slowRetry/5)
			channel := fmt.Sprintf(tc.channel, key)
			if strings.HasSuffix(channel, "*") {
				v, err := srvs[0].Do("PUBSUB", "CHANNELS", channel)
				if err != nil || len(v.([]any)) != 1 {
					t.Fatalf("PUBSUB CHANNELS %s = %v, %v; want the waiter's manager's channel", channel, v, err)
				}
				channel = v.([]any)[0].(string)
			}
			publish := func(payload string, on ...*redistest.Server) {
				for _, s := range on {
					if _, err := s.Do("PUBLISH", channel, payload); err != nil {
						t.Fatal(err)
					}
				}
			}
			// await waits until done reports true, failing t if the wait
			// returns first.
			await := func(what string, done func() bool) {
				t.Helper()
				for deadline := time.Now().Add(slowRetry / 5); !done(); time.Sleep(time.Millisecond) {
					select {
					case r := <-res:
						t.Fatalf("waiter returned (%v) while the lock was held, after hostile wake messages", r.err)
					default:
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: not after %v", what, slowRetry/5)
					}
				}
			}
			if tc.counts {
				// One node publishes each count, so that it wakes the waiter
				// into one attempt, which draws the overflowing count's
				// spread first; each attempt takes a time of its own, hence
				// the rounds. A release heard while the waiter's previous
				// attempt is still under way is forgotten; the count is
				// published again until an attempt follows it.
				for range 4 {
					for _, p := range overflowingCounts {
						before := attempts.n.Load()
						woke := func() bool { return attempts.n.Load() > before }
						for try := 0; !woke(); try++ {
							if try == 20 {
								t.Fatalf("waiter not woken by %q into an attempt after 20 publications", p)
							}
							publish(p, srvs[0])
							for deadline := time.Now().Add(slowRetry / 50); !woke() && time.Now().Before(deadline); {
								select {
								case r := <-res:
									t.Fatalf("waiter returned (%v) while the lock was held, after hostile wake messages", r.err)
								default:
								}
								time.Sleep(time.Millisecond)
							}
						}
					}
				}
				time.Sleep(3 * nodeTimeout) // the attempts they started end
			}
			ignored, tried := dlm.WakeIgnored(waiterM), attempts.n.Load()
			for _, p := range tc.hostile {
				publish(p, srvs...)
			}
			want := ignored + uint64(len(tc.hostile)*len(srvs))
			await(fmt.Sprintf("waiter counting %d malformed messages", want-ignored), func() bool { return dlm.WakeIgnored(waiterM) >= want })
			if got := attempts.n.Load() - tried; got != 0 {
				t.Errorf("malformed wake messages woke the waiter into %d attempts; want none", got)
			}
			released := time.Now()
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-res
			if r.err != nil {
				t.Fatalf("waiter after hostile wake messages = %v; want the lock", r.err)
			}
			defer r.l.Unlock(ctx)
			if d := r.at.Sub(released); d > slowRetry/5 {
				t.Errorf("waiter obtained the lock %v after its release; want it woken by the release, long before its next retry (%v to %v)", d, slowRetry/2, slowRetry)
			}
		})
	}
}
