package dlm_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// attemptCounter is a Hook that counts acquire attempts.
type attemptCounter struct{ n atomic.Int64 }

func (c *attemptCounter) OnEvent(_ context.Context, e *dlm.Event) {
	if e.Kind == dlm.EventAttempt {
		c.n.Add(1)
	}
}

// awaitQuiet waits until c has counted no attempt for quiet, for at most
// bound, and fails t otherwise: a waiter that started to listen tries once
// more at once (a release may have come before it listened), and a count of
// the attempts that something else starts begins after that one.
func (c *attemptCounter) awaitQuiet(t *testing.T, quiet, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for last, since := c.n.Load(), time.Now(); time.Since(since) < quiet; time.Sleep(time.Millisecond) {
		if n := c.n.Load(); n != last {
			last, since = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempts went on for %v; want a pause of %v", bound, quiet)
		}
	}
}

// reopensWithin is how many times a node's subscription may be opened again
// within d while every one it opens is cut at once: the first pause is
// dlm.MinReopen, and each one after doubles up to dlm.MaxReopen.
func reopensWithin(d time.Duration) int {
	n, pause := 1, dlm.MinReopen // one may begin as the window opens
	for spent := pause; spent <= d; spent += pause {
		n++
		pause = min(2*pause, dlm.MaxReopen)
	}
	return n
}

// TestWaiterNotSpunBySubscriptionChurn checks that a waiter whose
// subscriptions are cut as fast as they are made again keeps to its retry
// pace: each subscription made again wakes it once (a release may have gone
// unheard), but the node's subscriptions are opened again only after a
// pause that doubles while they keep failing, so the cuts cannot set the
// pace of its attempts. It does so for every kind of waiter: a mutex behind
// its holder, a writer behind a reader, a reader behind a writer and a
// permit behind a full semaphore. (Opened again at once, each subscription
// woke the waiter into an attempt: thousands a second.)
func TestWaiterNotSpunBySubscriptionChurn(t *testing.T) {
	t.Parallel()
	const (
		backoff = 100 * time.Millisecond // FixedBackoff: waits of 50 to 100ms
		window  = 2 * time.Second
	)
	type waitFunc func(ctx context.Context, m *dlm.Manager, h dlm.Hook) error
	cases := []struct {
		name string
		hold func(ctx context.Context, m *dlm.Manager) (*dlm.Lock, error)
		wait waitFunc
	}{
		{"mutex behind mutex",
			func(ctx context.Context, m *dlm.Manager) (*dlm.Lock, error) { return m.TryLock(ctx, "spin") },
			func(ctx context.Context, m *dlm.Manager, h dlm.Hook) error {
				_, err := m.Lock(ctx, "spin", dlm.WithHook(h))
				return err
			}},
		{"writer behind reader",
			func(ctx context.Context, m *dlm.Manager) (*dlm.Lock, error) { return m.TryRLock(ctx, "spin") },
			func(ctx context.Context, m *dlm.Manager, h dlm.Hook) error {
				_, err := m.Lock(ctx, "spin", dlm.WithHook(h))
				return err
			}},
		{"reader behind writer",
			func(ctx context.Context, m *dlm.Manager) (*dlm.Lock, error) { return m.TryLock(ctx, "spin") },
			func(ctx context.Context, m *dlm.Manager, h dlm.Hook) error {
				_, err := m.RLock(ctx, "spin", dlm.WithHook(h))
				return err
			}},
		{"permit behind full semaphore",
			func(ctx context.Context, m *dlm.Manager) (*dlm.Lock, error) {
				s, err := m.Semaphore("spin", 1)
				if err != nil {
					return nil, err
				}
				return s.TryAcquire(ctx)
			},
			func(ctx context.Context, m *dlm.Manager, h dlm.Hook) error {
				s, err := m.Semaphore("spin", 1)
				if err != nil {
					return err
				}
				_, err = s.Acquire(ctx, dlm.WithHook(h))
				return err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srvs, nodes := startNodes(t, 3)
			m := rwManager(t, nodes, dlm.WithRetry(0, dlm.FixedBackoff(backoff)))
			ctx := context.Background()
			held, err := tc.hold(ctx, m)
			if err != nil {
				t.Fatalf("holder: %v", err)
			}
			defer held.Unlock(ctx)

			var c attemptCounter
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			waited := make(chan error, 1)
			go func() { waited <- tc.wait(wctx, m, &c) }()
			// The second attempt follows the subscriptions.
			for deadline := time.Now().Add(10 * time.Second); c.n.Load() < 2; time.Sleep(2 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the waiter made %d attempts in 10s; want 2", c.n.Load())
				}
			}

			var stop atomic.Bool
			var wg sync.WaitGroup
			var kills atomic.Int64
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					for _, s := range srvs {
						if v, err := s.Do("CLIENT", "KILL", "TYPE", "pubsub"); err == nil {
							n, _ := v.(int64)
							kills.Add(n)
						}
					}
					time.Sleep(time.Millisecond)
				}
			}()
			before := c.n.Load()
			time.Sleep(window)
			made := c.n.Load() - before
			stop.Store(true)
			wg.Wait()
			cancel()
			if err := <-waited; err == nil {
				t.Fatal("the waiter obtained a lock still held")
			}

			// Paced by the retry policy: at least backoff/2 between
			// attempts, plus one under way as the window opens; and one
			// wake-up for each subscription made again, on each node.
			paced := int(window/(backoff/2)) + 1
			woken := len(srvs) * reopensWithin(window)
			t.Logf("%d attempts in %v while %d subscriptions were cut; bound %d paced + %d woken", made, window, kills.Load(), paced, woken)
			if kills.Load() < 2*int64(len(srvs)) {
				t.Fatalf("only %d subscriptions cut in %v; the test did not churn them", kills.Load(), window)
			}
			if made > int64(paced+woken) {
				t.Errorf("the waiter made %d attempts in %v while its subscriptions were cut; want at most %d (%d at the retry pace, %d woken by subscriptions made again)",
					made, window, paced+woken, paced, woken)
			}
		})
	}
}

// TestWaiterNotWokenByOtherKeys checks that releases announced for other
// keys, many and heard by the same subscriptions (the waiter's manager
// waits for those keys too), do not wake a waiter: it keeps to its retry
// pace.
func TestWaiterNotWokenByOtherKeys(t *testing.T) {
	t.Parallel()
	const (
		backoff = 100 * time.Millisecond // FixedBackoff: waits of 50 to 100ms
		window  = 2 * time.Second
	)
	_, nodes := startNodes(t, 3)
	m := rwManager(t, nodes, dlm.WithRetry(0, dlm.FixedBackoff(backoff)))
	other := rwManager(t, nodes)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := m.TryLock(ctx, "spin")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())

	var c attemptCounter
	waited := make(chan error, 1)
	go func() {
		_, err := m.Lock(ctx, "spin", dlm.WithHook(&c))
		waited <- err
	}()
	// Releases of "busy", announced to m's waiter for it: other takes and
	// releases it in turn with that waiter.
	var wg sync.WaitGroup
	var releases atomic.Int64
	for _, mm := range []*dlm.Manager{m, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := mm.Lock(ctx, "busy")
				if err != nil {
					continue
				}
				if l.Unlock(context.Background()) == nil {
					releases.Add(1)
				}
			}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); c.n.Load() < 2; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiter made %d attempts in 10s; want 2", c.n.Load())
		}
	}
	// The window lasts at least its length and until "busy" was released
	// 20 times, however busy the machine; the bound is the retry pace
	// over the window as long as it lasted.
	before, r0, began := c.n.Load(), releases.Load(), time.Now()
	time.Sleep(window)
	for deadline := began.Add(10 * window); releases.Load()-r0 < 20 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	made, released, took := c.n.Load()-before, releases.Load()-r0, time.Since(began)
	cancel()
	wg.Wait()
	if err := <-waited; err == nil {
		t.Fatal("the waiter obtained a lock still held")
	}
	paced := int(took/(backoff/2)) + 1
	t.Logf("%d attempts in %v while %q was released %d times; bound %d", made, took, "busy", released, paced)
	if released < 20 {
		t.Fatalf("%q released only %d times in %v; the test did not announce many releases", "busy", released, took)
	}
	if made > int64(paced) {
		t.Errorf("the waiter made %d attempts in %v while another key was released %d times; want at most %d, the retry pace", made, took, released, paced)
	}
}

// TestFailedAttemptDoesNotWakeItself checks a waiter for a lock whose holder
// lacks the key on node 0, one of the nodes that announce releases: each
// attempt takes the key there, is refused by the others and releases it. Were
// that release announced, it would wake the waiter itself, which would try
// again at once, at the pace of a round trip; it keeps to its retry pace.
func TestFailedAttemptDoesNotWakeItself(t *testing.T) {
	t.Parallel()
	const (
		backoff = 100 * time.Millisecond // FixedBackoff: waits of 50 to 100ms
		window  = time.Second
	)
	srvs, nodes := startNodes(t, 3)
	for _, s := range srvs[1:] { // another holder, on nodes 1 and 2 only
		if _, err := s.Do("SET", "redlock:{half}", "other", "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	m := rwManager(t, nodes, dlm.WithRetry(0, dlm.FixedBackoff(backoff)))
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var c attemptCounter
	_, err := m.Lock(ctx, "half", dlm.WithHook(&c))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v; want the context's deadline", err)
	}
	paced := int64(window/(backoff/2)) + 2 // the first two attempts come at once
	t.Logf("%d attempts in %v; bound %d", c.n.Load(), window, paced)
	if c.n.Load() > paced {
		t.Errorf("the waiter made %d attempts in %v; want at most %d, the retry pace", c.n.Load(), window, paced)
	}
}
