package dlm_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
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
	for _, tc := range []hostileCase{
		{"reader", func(ctx context.Context, m *dlm.Manager, key string) (*dlm.Lock, error) { return m.RLock(ctx, key) },
			"redlock:{%s}:wake", true, malformedWakes},
		{"mutex waiter", func(ctx context.Context, m *dlm.Manager, key string) (*dlm.Lock, error) { return m.Lock(ctx, key) },
			"redlock:{%s}:wake:*", false, append(slices.Clone(malformedWakes), "", "t", "r5", "r"+strings.Repeat("9", 18),
				strings.Repeat("O", 11)+strings.Repeat("w", 11))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, 3)
			p := redistest.MeasurePace(t, srvs[0])
			nodeTimeout := p.Stretch(200 * time.Millisecond)
			t.Logf("pace %v: node timeout %v", p, nodeTimeout)
			// Each run has a waiter of its own: a run in which the waiter's
			// retry came too close to the release to tell it from a
			// wake-up (see checkWoken) runs again.
			for run := range wakeRuns {
				if hostileRun(t, srvs, tc, nodeTimeout, run) {
					return
				}
			}
			t.Fatalf("inconclusive %d times: the waiter's retry came too close to the release each time", wakeRuns)
		})
	}
}

// hostileCase is a case of TestWakePublishCannotCrashWaiter.
type hostileCase struct {
	name string
	// wait waits for key, held by the writer, on m.
	wait func(ctx context.Context, m *dlm.Manager, key string) (*dlm.Lock, error)
	// channel is the pattern of the channel the waiter listens on.
	channel string
	// counts are published to wake the waiter into attempts; the
	// others must not.
	counts  bool
	hostile []string
}

// hostileRun runs TestWakePublishCannotCrashWaiter's case tc once, on a key
// and managers of its own for run, whose waiter's node timeout is
// nodeTimeout, and reports whether it could tell that the real release
// woke the waiter (see checkWoken).
func hostileRun(t *testing.T, srvs []*redistest.Server, tc hostileCase, nodeTimeout time.Duration, run int) bool {
	t.Helper()
	attempts, log := &attemptCounter{}, &attemptLog{}
	holderM, waiterM := newWakeManager(t, srvs), newWakeManager(t, srvs, dlm.WithHook(hookPair{attempts, log}), dlm.WithNodeTimeout(nodeTimeout))
	ctx := context.Background()
	key := fmt.Sprintf("hostile-%s-%d", strings.ReplaceAll(tc.name, " ", "-"), run)
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
	attempts.awaitQuiet(t, 3*nodeTimeout, time.Minute)
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
	// returns first; the bound, stretched to the pace measured
	// now, only keeps the test from hanging.
	await := func(what string, done func() bool) {
		t.Helper()
		poll(t, srvs[0], what, func() bool {
			select {
			case r := <-res:
				t.Fatalf("waiter returned (%v) while the lock was held, after hostile wake messages", r.err)
			default:
			}
			return done()
		})
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
					for deadline := time.Now().Add(nodeTimeout); !woke() && time.Now().Before(deadline); {
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
		attempts.awaitQuiet(t, 3*nodeTimeout, time.Minute) // the attempts they started end
	}
	ignored, tried := dlm.WakeIgnored(waiterM), attempts.n.Load()
	for _, p := range tc.hostile {
		publish(p, srvs...)
	}
	want := ignored + uint64(len(tc.hostile)*len(srvs))
	await(fmt.Sprintf("count of %d malformed messages by the waiter", want-ignored), func() bool { return dlm.WakeIgnored(waiterM) >= want })
	if got := attempts.n.Load() - tried; got != 0 {
		t.Errorf("malformed wake messages woke the waiter into %d attempts; want none", got)
	}
	pace := redistest.MeasurePace(t, srvs[0])
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("waiter after hostile wake messages = %v; want the lock", r.err)
	}
	defer r.l.Unlock(ctx)
	pace = pace.Max(redistest.MeasurePace(t, srvs[0]))
	t.Logf("the waiter obtained the lock %v after the release (pace %v)", r.at.Sub(released).Round(time.Millisecond), pace)
	// Woken by the release, long before its next retry; how soon,
	// TestWakeOnClock proves on the fake clock.
	return checkWoken(t, log, 0, released, wakeWithin(pace))
}

// hookPair passes each event to both its hooks.
type hookPair [2]dlm.Hook

func (h hookPair) OnEvent(ctx context.Context, e *dlm.Event) {
	h[0].OnEvent(ctx, e)
	h[1].OnEvent(ctx, e)
}

// TestRepeatedConfirmationsKeepPace checks, on three real servers, a waiter
// one of whose nodes repeats every confirmation of a subscription every 2
// ms, as a node whose replies an attacker controls may: the waiter keeps to
// its retry pace. Each confirmation after a channel's first was taken for a
// subscription made again, which wakes every watcher of the channel (a
// release may have gone unheard) into an attempt with no pause: over 3 s,
// 1,193 to 1,481 attempts where 7 or 8 were made without the frames. Only
// the node's answer to a SUBSCRIBE the waiter's subscription sent now
// counts, and none is sent while the subscription lasts.
func TestRepeatedConfirmationsKeepPace(t *testing.T) {
	t.Parallel()
	const (
		backoff = 100 * time.Millisecond // FixedBackoff: waits of 50 to 100ms at least
		window  = 3 * time.Second
	)
	srvs := redistest.StartServers(t, 3)
	var repeaters sync.WaitGroup
	t.Cleanup(repeaters.Wait) // after the managers closed their subscriptions
	hostile := &confirmRepeater{Node: respNode(t, srvs[0].Addr(), ""), every: 2 * time.Millisecond, wg: &repeaters}
	nodes := []driver.Node{hostile, respNode(t, srvs[1].Addr(), ""), respNode(t, srvs[2].Addr(), "")}
	holderM := newWakeManager(t, srvs)
	var c attemptCounter
	m, err := dlm.New(nodes, dlm.WithRetry(0, dlm.FixedBackoff(backoff)), dlm.WithHook(&c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := holderM.TryLock(ctx, "repeated-confirmations", dlm.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := m.Lock(ctx, "repeated-confirmations")
		waited <- err
	}()
	awaitListening(t, srvs, "repeated-confirmations")
	poll(t, srvs[0], "the waiter's second attempt, after its subscriptions", func() bool { return c.n.Load() >= 2 })
	poll(t, srvs[0], "confirmations repeated by the hostile node", func() bool { return hostile.repeated.Load() >= 10 })
	before, calls0, repeated0, began := c.n.Load(), scriptCalls(t, srvs[1:]), hostile.repeated.Load(), time.Now()
	time.Sleep(window)
	made, calls, repeated, took := c.n.Load()-before, scriptCalls(t, srvs[1:])-calls0, hostile.repeated.Load()-repeated0, time.Since(began)
	cancel()
	if err := <-waited; err == nil {
		t.Fatal("the waiter obtained a lock still held")
	}
	paced := int(took/(backoff/2)) + 1
	t.Logf("%d attempts (%d script calls on the two honest nodes) in %v while one node repeated %d confirmations; bound %d", made, calls, took.Round(time.Millisecond), repeated, paced)
	if repeated < int64(window/time.Second)*10 {
		t.Fatalf("the hostile node repeated only %d confirmations in %v; the test did not flood the waiter", repeated, took)
	}
	if made > int64(paced) {
		t.Errorf("the waiter made %d attempts in %v while a node repeated its confirmations; want at most %d, the retry pace", made, took, paced)
	}
}

// confirmRepeater is a node that repeats every confirmation of a
// subscription every interval, on its own, until the subscription ends.
type confirmRepeater struct {
	driver.Node
	every    time.Duration
	wg       *sync.WaitGroup // the repeating goroutines
	repeated atomic.Int64
}

func (n *confirmRepeater) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	r := &repeatingHandler{n: n, h: h, started: map[string]bool{}}
	sub, err := n.Node.(driver.Subscriber).Subscribe(ctx, r)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.done = sub.Done()
	r.mu.Unlock()
	return sub, nil
}

// repeatingHandler passes what a subscription hears to h, one call at a
// time, and starts repeating each confirmation.
type repeatingHandler struct {
	n       *confirmRepeater
	h       driver.PubSubHandler
	mu      sync.Mutex
	done    <-chan struct{} // the subscription's Done; nil before Subscribe returned
	started map[string]bool
}

func (r *repeatingHandler) Message(channel, payload string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Message(channel, payload)
}

func (r *repeatingHandler) Subscribed(channel string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Subscribed(channel)
	if r.started[channel] || r.done == nil {
		return
	}
	r.started[channel] = true
	done := r.done
	r.n.wg.Add(1)
	go func() {
		defer r.n.wg.Done()
		tick := time.NewTicker(r.n.every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			r.mu.Lock()
			select {
			case <-done: // the handler is not called after the end
			default:
				r.h.Subscribed(channel)
				r.n.repeated.Add(1)
			}
			r.mu.Unlock()
		}
	}()
}

// scriptCalls returns how many scripts srvs ran, by their commandstats.
func scriptCalls(t *testing.T, srvs []*redistest.Server) int64 {
	t.Helper()
	var total int64
	for _, s := range srvs {
		v, err := s.Do("INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(v.(string), "\n") {
			for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
					n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
					total += n
				}
			}
		}
	}
	return total
}

// TestOneNodeListenersKeepPace checks, on three real servers, a waiter one
// of whose nodes says in every refusal that others listen on the key's
// broadcast channel, where nobody does: the waiter keeps the pace of a
// placed waiter whose manager hears the releases, an attempt no sooner than
// a sixth of its place's life after the last, as if the node had not said
// it. One node's word took the waiter for one that others' releases may not
// name: it attempted at its retry pace, 3 times as often (and more with a
// faster retry), and listened on the broadcast channel too. It now takes as
// many nodes as refuse a quorum, two of three.
func TestOneNodeListenersKeepPace(t *testing.T) {
	t.Parallel()
	const (
		backoff = 60 * time.Millisecond // FixedBackoff: waits of 30 to 60ms at the retry pace
		window  = 3 * time.Second
	)
	srvs := redistest.StartServers(t, 3)
	claimer := &listenersClaimer{Node: respNode(t, srvs[0].Addr(), "")}
	nodes := []driver.Node{claimer, respNode(t, srvs[1].Addr(), ""), respNode(t, srvs[2].Addr(), "")}
	holderM := newWakeManager(t, srvs, holdEverywhere(t, srvs[0]))
	var c attemptCounter
	m, err := dlm.New(nodes, dlm.WithRetry(0, dlm.FixedBackoff(backoff)), dlm.WithHook(&c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := holderM.TryLock(ctx, "one-node-listeners", dlm.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())
	// Held on every node: a grant by node 0, whose reply came late to the
	// holder, would leave the waiter no refusal there to claim listeners in.
	awaitHeld(t, srvs, "one-node-listeners")
	waited := make(chan error, 1)
	go func() {
		_, err := m.Lock(ctx, "one-node-listeners")
		waited <- err
	}()
	awaitListening(t, srvs, "one-node-listeners")
	poll(t, srvs[0], "the waiter's second attempt, after its subscriptions", func() bool { return c.n.Load() >= 2 })
	before, claims0, began := c.n.Load(), claimer.claims.Load(), time.Now()
	time.Sleep(window)
	made, claims, took := c.n.Load()-before, claimer.claims.Load()-claims0, time.Since(began)
	cancel()
	if err := <-waited; err == nil {
		t.Fatal("the waiter obtained a lock still held")
	}
	// A sixth of the place's life at least between attempts, plus one
	// under way as the window opens.
	paced := int(took/(dlm.DefaultPlaceExpiry/6)) + 1
	t.Logf("%d attempts in %v while one node said others listen in %d refusals; bound %d", made, took.Round(time.Millisecond), claims, paced)
	if claims == 0 {
		t.Fatal("the node said nothing in the window; the test did not claim listeners")
	}
	if made > int64(paced) {
		t.Errorf("the waiter made %d attempts in %v while one node said others listen; want at most %d, the pace of a placed waiter that hears the releases", made, took, paced)
	}
}

// listenersClaimer is a node that says, in every refusal of the mutex's
// acquire, that others listen on the key's broadcast channel.
type listenersClaimer struct {
	driver.Node
	claims atomic.Int64
}

func (n *listenersClaimer) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	v, err := n.Node.Eval(ctx, s, keys, args)
	if r, ok := v.([]any); ok && err == nil && len(r) == 4 && r[0] == int64(0) {
		r = slices.Clone(r)
		r[3] = int64(1)
		n.claims.Add(1)
		return r, nil
	}
	return v, err
}

func (n *listenersClaimer) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	return n.Node.(driver.Subscriber).Subscribe(ctx, h)
}
