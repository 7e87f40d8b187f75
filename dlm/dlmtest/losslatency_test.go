package dlmtest_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// lossTrials sets TestLossSignalLatency's trials per kind of loss: make test
// runs a few; more give steadier percentiles (go test -run
// TestLossSignalLatency -loss.trials=200 -v ./dlm/dlmtest).
var lossTrials = flag.Int("loss.trials", 4, "trials per kind of loss in TestLossSignalLatency")

// TestLossSignalLatency measures, over many trials on three real nodes, when
// Do's fn sees its context cancelled after its lock is lost, for both kinds
// of loss:
//   - a frozen majority, where no extension can succeed: the lock is
//     declared lost a loss guard before its validity ends (docs/lifetime.md),
//     so the cancellation must come after that point and before the end;
//   - keys taken from a majority, found by the next extension.
//
// Every trial is bounded by trialBound: a lock that is not declared lost by
// then fails the test with a message rather than hangs it.
func TestLossSignalLatency(t *testing.T) {
	t.Parallel()
	trials := *lossTrials
	// The TTL sets the margins: the cancellation is due a loss guard
	// before the validity ends, and must get through the scheduler within
	// it. The 50 ms guard of a 1 s TTL was overrun by 8 ms here, and by
	// 96 ms in the conformance suite, under -race with a busy loop on every
	// core (make test-load); a 5 s TTL gives 247 ms.
	const (
		ttl         = 5 * time.Second
		nodeTimeout = ttl / 20
		// The documented loss guard: a twentieth of the validity
		// (TTL less 1% and 2 ms), at most the node timeout.
		guard = min((ttl-ttl/100-2*time.Millisecond)/20, nodeTimeout)
		// trialBound bounds a trial's wait for the loss: it is due within
		// one TTL of the injection.
		trialBound = 3 * ttl
	)
	servers := redistest.StartServers(t, 3)
	var nodes []driver.Node
	for _, s := range servers {
		cfg, err := driver.ParseURL("redis://" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n := resp.NewNode(cfg)
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	// The moment of each cancellation is the EventLost the manager sends
	// as it cancels fn's context.
	var lostMu sync.Mutex
	lostAt := map[string]time.Time{}
	hook := lossHook(func(e *dlm.Event) {
		lostMu.Lock()
		defer lostMu.Unlock()
		if _, ok := lostAt[e.Key]; !ok {
			lostAt[e.Key] = e.Start
		}
	})
	m, err := dlm.New(nodes, dlm.WithTTL(ttl), dlm.WithNodeTimeout(nodeTimeout), dlm.WithKeyPrefix("loss:"), dlm.WithHook(hook))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// run holds key under Do, calls inject to cause the loss, and returns
	// when fn's context was cancelled and the lock's final validity end.
	// It fails the test when the loss is not signalled within trialBound.
	run := func(key string, inject, heal func()) (cancelled, until time.Time) {
		err := m.Do(context.Background(), key, func(ctx context.Context) error {
			inject()
			select {
			case <-ctx.Done():
			case <-time.After(trialBound):
				return fmt.Errorf("fn's context still live after %v", trialBound)
			}
			until = dlm.LockFromContext(ctx).Until().Round(0)
			return nil
		})
		heal()
		if !errors.Is(err, dlm.ErrLockLost) {
			t.Fatalf("Do(%q) = %v; want ErrLockLost within %v of the call (the injected loss was not signalled)", key, err, trialBound)
		}
		lostMu.Lock()
		defer lostMu.Unlock()
		at, ok := lostAt[key]
		if !ok {
			t.Fatalf("Do(%q): fn's context cancelled with no EventLost", key)
		}
		return at, until
	}
	majority := servers[:2]

	var signal, margin, taken []time.Duration
	for i := 0; i < trials; i++ {
		cancelled, until := run(fmt.Sprintf("frozen-%d", i), func() {
			for _, s := range majority {
				s.Pause()
			}
		}, func() {
			for _, s := range majority {
				s.Resume()
			}
		})
		signal = append(signal, cancelled.Sub(until.Add(-guard)))
		margin = append(margin, until.Sub(cancelled))
		if !cancelled.Before(until) {
			t.Errorf("trial %d: fn's context cancelled %v after the validity ended", i, cancelled.Sub(until))
		}
		if cancelled.Before(until.Add(-guard)) {
			t.Errorf("trial %d: fn's context cancelled %v before the loss guard, while the lock could still be extended", i, until.Add(-guard).Sub(cancelled))
		}

		// The grant may come from two nodes while the acquire request to
		// the third is still under way: deleted there, the key would be
		// set again when it arrives, and the lock, still on a majority,
		// would never be lost. So the key is taken rather than deleted:
		// set to another holder's value, which a late acquire leaves alone
		// and every extension finds not its own, as it would find the key
		// gone.
		key := fmt.Sprintf("taken-%d", i)
		var takenAt time.Time
		cancelled, _ = run(key, func() {
			takenAt = time.Now()
			for _, s := range majority {
				if _, err := s.Do("SET", "loss:{"+key+"}", "taken", "PX", "60000"); err != nil {
					t.Error(err)
				}
			}
		}, func() {})
		taken = append(taken, cancelled.Sub(takenAt))
	}
	t.Logf("frozen majority (guard %v): cancellation %v/%v (p50/p99) after the loss guard, %v/%v (p50/p1) before the end of validity, over %d trials",
		guard, pct(signal, 50), pct(signal, 99), pct(margin, 50), pct(margin, 1), trials)
	t.Logf("keys taken from a majority: cancellation %v/%v (p50/p99) after they were taken, over %d trials",
		pct(taken, 50), pct(taken, 99), trials)
}

// lossHook is a [dlm.Hook] that passes the EventLost events to f.
type lossHook func(e *dlm.Event)

func (h lossHook) OnEvent(_ context.Context, e *dlm.Event) {
	if e.Kind == dlm.EventLost {
		h(e)
	}
}

// pct returns the p-th percentile of ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}
