//go:build go1.25

// The learned node timeout ([timing.timeoutCap], round.RTO) on
// testing/synctest's fake clock, with fake nodes that answer late or
// never. See synctest_test.go for the build constraint and the go:debug
// line that covers this file too.

package dlm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestSlowNodesServed checks that nodes that become slow, answering in 400
// ms, above the default node timeout of 250 ms, are served at the second
// attempt, as the timeout of each backs off from its timeouts and then
// follows its round trips, rather than failing every attempt by its
// timeout (the stall of many processes on one key: every attempt "0 for,
// 0 against, 3 failed"); and that a new manager over such nodes is served
// at its first attempt, which waits the cap for nodes that never
// answered. The grant's validity is counted from its attempt's start, as
// any grant's.
func TestSlowNodesServed(t *testing.T) {
	t.Parallel()
	const slow = 400 * time.Millisecond
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		fresh := newManager(t, fs)
		for _, f := range fs {
			f.inject(healthy, slow)
		}
		l, err := fresh.TryLock(context.Background(), "fresh")
		if err != nil {
			t.Fatalf("TryLock(%q) of a new manager over nodes answering in %v = %v; want the lock", "fresh", slow, err)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock = %v", err)
		}
		synctest.Wait()
		for _, f := range fs {
			f.inject(healthy, 0)
		}
		var mu sync.Mutex
		var starts []time.Time
		hook := hookFunc(func(e *Event) {
			if e.Kind == EventAttempt {
				mu.Lock()
				starts = append(starts, e.Start)
				mu.Unlock()
			}
		})
		m := newManager(t, fs, WithRetry(5, FixedBackoff(50*time.Millisecond)), WithHook(hook))
		if l, err := m.TryLock(context.Background(), "quick"); err != nil {
			t.Fatalf("TryLock(%q) on quick nodes = %v", "quick", err)
		} else if err := l.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock on quick nodes = %v", err)
		}
		synctest.Wait()
		for _, f := range fs {
			f.inject(healthy, slow)
		}
		before := fs[0].count("acquire")
		l, err = m.Lock(context.Background(), "k")
		if err != nil {
			t.Fatalf("Lock(%q) with every node answering in %v = %v; want the lock within 5 attempts", "k", slow, err)
		}
		synctest.Wait()
		if got := fs[0].count("acquire") - before; got != 2 {
			t.Errorf("Lock took %d attempts; want 2: the first times out at 250 ms and doubles the timeout to 500 ms", got)
		}
		mu.Lock()
		start := starts[len(starts)-1] // the quick TryLock's attempt comes first
		mu.Unlock()
		if want := start.Add(m.cfg.validity(m.cfg.ttl)); !l.Until().Equal(want) {
			t.Errorf("Until() = attempt start+%v; want start+%v", l.Until().Sub(start), want.Sub(start))
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock on nodes answering in %v = %v", slow, err)
		}
	})
}

// TestDeadNodeTimeoutCapped checks that a node that stops answering backs
// its timeout off to the cap and no further: the attempts, which two nodes
// decide, do not wait for it, and each Unlock, which waits for every node,
// waits for it as long as its timeout (once its acquire request timed
// out): 500 ms, the floor of 250 ms doubled by the first acquire's
// timeout, then the cap of a tenth of the default TTL, 1 s, however long
// it stays dead.
func TestDeadNodeTimeoutCapped(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		m := newManager(t, fs)
		floor, limit := m.cfg.timeout(), m.cfg.timeoutCap()
		if floor != 250*time.Millisecond || limit != time.Second {
			t.Fatalf("default node timeout %v, cap %v; want 250ms, 1s", floor, limit)
		}
		if got := m.rounds.Timeout(0, floor, limit); got != limit {
			t.Errorf("a node's timeout before its first reply is %v; want the cap %v", got, limit)
		}
		if l, err := m.TryLock(context.Background(), "alive"); err != nil {
			t.Fatalf("TryLock on live nodes = %v", err)
		} else if err := l.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock on live nodes = %v", err)
		}
		if got := m.rounds.Timeout(0, floor, limit); got != floor {
			t.Errorf("a node's timeout after it answered at once is %v; want the floor %v", got, floor)
		}
		fs[0].inject(hang, 0)
		want := []time.Duration{500 * time.Millisecond}
		for len(want) < 10 {
			want = append(want, time.Second)
		}
		ctx := context.Background()
		for i, w := range want {
			var l *Lock
			var err error
			if d := elapsed(func() { l, err = m.TryLock(ctx, "k") }); err != nil || d != 0 {
				t.Fatalf("TryLock %d with one node dead = %v after %v; want the lock at once", i+1, err, d)
			}
			time.Sleep(limit) // the acquire request to the dead node times out
			if d := elapsed(func() { err = l.Unlock(ctx) }); d != w {
				t.Errorf("Unlock %d with one node dead took %v; want %v", i+1, d, w)
			}
			if err != nil {
				t.Errorf("Unlock %d with one node dead = %v; want nil (a quorum released)", i+1, err)
			}
			if got := m.rounds.Timeout(0, floor, limit); got != min(2*w, limit) {
				t.Fatalf("after Unlock %d the dead node's timeout is %v; want %v, at most the cap %v", i+1, got, min(2*w, limit), limit)
			}
		}
	})
}

// TestWithNodeTimeoutFixed checks that a timeout set by WithNodeTimeout is
// fixed: nodes that answer in 400 ms are never served under 300 ms,
// however many attempts time out, and each attempt waits 300 ms exactly.
func TestWithNodeTimeoutFixed(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		for _, f := range fs {
			f.inject(healthy, 400*time.Millisecond)
		}
		var mu sync.Mutex
		var took []time.Duration
		hook := hookFunc(func(e *Event) {
			if e.Kind == EventAttempt {
				mu.Lock()
				took = append(took, e.Duration)
				mu.Unlock()
			}
		})
		m := newManager(t, fs, WithNodeTimeout(timeout), WithRetry(6, FixedBackoff(50*time.Millisecond)), WithHook(hook))
		if _, err := m.Lock(context.Background(), "k"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Lock on nodes answering in 400ms under WithNodeTimeout(%v) = %v; want ErrUnavailable", timeout, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(took) != 6 {
			t.Fatalf("%d attempts; want 6", len(took))
		}
		for i, d := range took {
			if d != timeout {
				t.Errorf("attempt %d took %v; want the fixed %v", i+1, d, timeout)
			}
		}
		for i := range fs {
			if got := m.rounds.Timeout(i, m.cfg.timeout(), m.cfg.timeoutCap()); got != timeout {
				t.Errorf("node %d's timeout is %v; want the fixed %v", i, got, timeout)
			}
		}
	})
}

// TestLearnedTimeoutBounds checks the floor and the cap of the learned
// timeout for a range of TTLs (the cap leaves nine tenths of the TTL as the
// validity of an acquire that waited it, so that a grant that counts comes
// within its validity whatever the node's timeout), and that the nodes'
// timeouts stay within them whatever the nodes do: answer at once, in up
// to 2 s, fail or never answer, request after request.
func TestLearnedTimeoutBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts         []Option
		floor, limit time.Duration
	}{
		{nil, 250 * time.Millisecond, time.Second},
		{[]Option{WithTTL(time.Hour)}, 250 * time.Millisecond, time.Second},
		{[]Option{WithTTL(5 * time.Second)}, 250 * time.Millisecond, 500 * time.Millisecond},
		{[]Option{WithTTL(2 * time.Second)}, 100 * time.Millisecond, 200 * time.Millisecond},
		{[]Option{WithTTL(time.Second), WithDriftFactor(0.4)}, 50 * time.Millisecond, 100 * time.Millisecond},
		{[]Option{WithTTL(300 * time.Millisecond)}, 20 * time.Millisecond, 30 * time.Millisecond},
		{[]Option{WithTTL(100 * time.Millisecond)}, 20 * time.Millisecond, 20 * time.Millisecond},
		{[]Option{WithNodeTimeout(2 * time.Second)}, 2 * time.Second, 2 * time.Second},
	} {
		cfg, err := defaultConfig().with(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		floor, limit := cfg.timeout(), cfg.timeoutCap()
		t.Run(fmt.Sprintf("ttl=%v/floor=%v/cap=%v", cfg.ttl, floor, limit), func(t *testing.T) {
			t.Parallel()
			if floor != tc.floor || limit != tc.limit {
				t.Fatalf("floor %v, cap %v; want %v, %v", floor, limit, tc.floor, tc.limit)
			}
			if limit > floor && limit > cfg.ttl/10 {
				t.Fatalf("cap %v for TTL %v; want at most a tenth of the TTL", limit, cfg.ttl)
			}
			inBubble(t, func(t *testing.T) {
				fs := newFakes(3)
				rng := rand.New(rand.NewPCG(uint64(cfg.ttl), 39))
				var mu sync.Mutex
				for _, f := range fs {
					f.injectFor(func(string, []string) (fault, time.Duration) {
						mu.Lock()
						defer mu.Unlock()
						return []fault{healthy, healthy, healthy, refuse, hang}[rng.IntN(5)], time.Duration(rng.Int64N(int64(2 * time.Second)))
					})
				}
				m := newManager(t, fs, asManager(tc.opts)...)
				for i := range 200 {
					if l, err := m.TryLock(context.Background(), fmt.Sprint("k", i%7)); err == nil {
						go l.Unlock(context.Background())
					}
					time.Sleep(time.Duration(i%5) * 100 * time.Millisecond)
					for n := range fs {
						if got := m.rounds.Timeout(n, floor, limit); got < floor || got > limit {
							t.Fatalf("after attempt %d, node %d's timeout is %v; want within [%v, %v]", i+1, n, got, floor, limit)
						}
					}
				}
			})
		})
	}
}
