package bench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunSmoke runs every case of the harness, very briefly, against real
// servers: each library locks and unlocks, redlock's backends take read
// locks and semaphore permits, the hot-key cases run with a shared client
// and with a client per contender, the fairness case runs, a manager holds
// a few hundred auto-extended locks, and the report renders.
//
// It asserts what a run proves whatever the machine's speed: the run ends
// without error, every case has a result, no case had an error but a
// timeout, no two holders at once, the physical pairs answered as a free
// key should, and the report has its rows. That a case got anything done
// in its window (a cycle, a grant, a renewal) depends on the speed too: a
// case that counted nothing, without an error of another kind, is
// inconclusive, and the run is made again with every window doubled,
// smokeTries times before the test fails.
func TestRunSmoke(t *testing.T) {
	bin, err := RedisServerPath("")
	if err != nil {
		t.Fatal(err)
	}
	// The run's length is mostly work, not waiting: opening and warming up
	// every library, collecting the heap between rounds, which a busy
	// machine and the race detector slow down several times over. Its
	// bound is the one go test sets the binary (-timeout), less a tenth
	// for stopping the servers and reporting what ran.
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Until(deadline)/10))
		defer cancel()
	}
	c, err := StartCluster(ctx, bin, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for try, scale := 1, time.Duration(1); ; try, scale = try+1, 2*scale {
		var log strings.Builder
		r, err := Run(ctx, smokeConfig(scale, &log), c.Addrs(), c.Servers[0].Version)
		if err != nil {
			t.Fatalf("Run: %v\n%s", err, log.String())
		}
		t.Logf("run with windows ×%d took %v", scale, r.Elapsed.Round(time.Millisecond))
		idle := checkSmoke(t, r)
		switch {
		case t.Failed():
			t.Logf("progress log:\n%s", log.String())
			return
		case len(idle) == 0:
			return
		case try == smokeTries:
			t.Errorf("with windows up to ×%d, cases counted nothing: %s", scale, strings.Join(idle, "; "))
			t.Logf("progress log:\n%s", log.String())
			return
		}
		t.Logf("inconclusive with windows ×%d, cases counted nothing: %s; again with the windows doubled", scale, strings.Join(idle, "; "))
	}
}

// smokeTries is how many runs TestRunSmoke makes, each with windows twice
// as long, before a case that counts nothing fails it.
const smokeTries = 3

// smokeConfig returns the configuration of a smoke run whose measured
// windows are scale times their shortest; progress goes to log.
func smokeConfig(scale time.Duration, log *strings.Builder) Config {
	cfg := DefaultConfig()
	// A request of this race-enabled binary on a busy machine can take
	// longer than redlock's default node timeout (250 ms for the TTL of
	// 8 s; redsync's release waits up to go-redis' read timeout, 3 s), and
	// a warm-up's unlock that fails there fails the run: the warm-up runs
	// once, before anything is measured, and an error there is an error in
	// setting the library up. The smoke run checks that every case runs,
	// not how fast, so every library gets a node timeout well above such
	// stalls and well below the TTL.
	cfg.NodeTimeout = cfg.TTL / 4
	cfg.Duration, cfg.HotDuration, cfg.HotWarmup = scale*100*time.Millisecond, scale*120*time.Millisecond, 10*time.Millisecond
	cfg.FairDuration, cfg.FairContenders = scale*100*time.Millisecond, 3
	cfg.Goroutines, cfg.Contenders, cfg.Works = []int{2}, []int{3}, []time.Duration{0}
	cfg.SharedGoroutines = []int{2}
	cfg.AllocCycles, cfg.PhysBatch, cfg.Rounds = 20, 8, 2
	cfg.HeldLocks, cfg.HeldDuration = []int{200}, scale*1500*time.Millisecond // the TTL stays 3s, above the node timeout
	cfg.Log = log
	return cfg
}

// checkSmoke fails t for what is wrong with r whatever the machine's speed,
// and returns the cases that counted nothing in their windows (without an
// error but a timeout), which a slow machine can cause.
func checkSmoke(t *testing.T, r *Results) (idle []string) {
	t.Helper()
	switch {
	case r.Physical == nil || r.Physical.Failed != 0:
		t.Errorf("physical limit: %+v", r.Physical)
	case r.Physical.Pairs == 0:
		idle = append(idle, "physical limit: no pair")
	}
	for _, lib := range r.Libraries {
		switch u := r.uncontendedOf(lib.ID, 2); {
		case u == nil || !onlyTimeouts(u.Errors, u.FirstError):
			t.Errorf("%s uncontended: %+v", lib.ID, u)
		case u.Cycles == 0:
			idle = append(idle, lib.ID+" uncontended: no cycle")
		}
		// A window this short may pass without a grant when the contenders
		// split the nodes' votes at its start and wait out a retry delay
		// (redsync's is 50 ms at least), so grants are counted over all of
		// the library's contended cases.
		grants := 0
		for _, mode := range ClientModes {
			h := r.hotOf(lib.ID, mode, 3, 0)
			if h == nil || !onlyTimeouts(h.Errors, h.FirstError) || h.Violations != 0 {
				t.Errorf("%s hot key, %v: %+v", lib.ID, mode, h)
				continue
			}
			grants += h.Grants
		}
		if h := r.fairOf(lib.ID); h == nil || h.Clients != ClientPerContender || !onlyTimeouts(h.Errors, h.FirstError) || h.Violations != 0 {
			t.Errorf("%s fairness case: %+v", lib.ID, h)
		} else {
			grants += h.Grants
		}
		if grants == 0 {
			idle = append(idle, lib.ID+": no grant in any hot-key or fairness case")
		}
		switch l := r.latencyOf(lib.ID); {
		case l == nil || !onlyTimeouts(l.Errors, l.FirstError):
			t.Errorf("%s latency: %+v", lib.ID, l)
		case l.Acquire.N == 0:
			idle = append(idle, lib.ID+" latency: no acquire")
		}
		if a := r.allocsOf(lib.ID); a == nil || a.Allocs <= 0 {
			t.Errorf("%s allocs: %+v", lib.ID, a)
		}
		// The read lock and the semaphore run on redlock's backends in
		// the default mode only.
		for _, kind := range SharedKinds {
			u, a := r.sharedOf(kind, lib.ID, 2), r.sharedAllocsOf(kind, lib.ID)
			switch {
			case lib.Baseline || lib.Fair:
				if u != nil || a != nil {
					t.Errorf("%s %s: %+v, %+v; want no lease case", lib.ID, kind, u, a)
				}
			case u == nil || !onlyTimeouts(u.Errors, u.FirstError):
				t.Errorf("%s %s: %+v", lib.ID, kind, u)
			case a == nil || a.Allocs <= 0 || a.Errors != 0:
				t.Errorf("%s %s allocs: %+v", lib.ID, kind, a)
			case u.Cycles == 0:
				idle = append(idle, fmt.Sprintf("%s %s: no cycle", lib.ID, kind))
			}
		}
	}
	if md := Markdown(r); !strings.Contains(md, "| redlock+rueidis | 2 |") {
		t.Errorf("report lacks the uncontended row of rueidis:\n%s", md)
	}
	// The held-locks case ran: locks taken, extended in rounds the
	// manager reported, released.
	switch h := r.heldOf("goredis", 200); {
	case h == nil || h.ClientCPU <= 0:
		t.Errorf("held-locks case of 200 locks: %+v; want locks held and extended", h)
	case h.Taken == 0 || h.Lag.N == 0:
		if !onlyTimeouts(h.Failed, h.FirstError) {
			t.Errorf("held-locks case of 200 locks: %+v; want locks held and extended", h)
		} else {
			idle = append(idle, fmt.Sprintf("held-locks case: %d taken, %d renewals reported", h.Taken, h.Lag.N))
		}
	default:
		if md := Markdown(r); !strings.Contains(md, "| redlock+goredis | 200 |") {
			t.Errorf("report lacks the held-locks row:\n%s", md)
		}
	}
	return idle
}

// onlyTimeouts reports whether a case had no errors but node timeouts,
// which a machine busy with other tests can cause under the race detector.
func onlyTimeouts(n int, first string) bool {
	return n == 0 || strings.Contains(first, "deadline exceeded") || strings.Contains(first, "timeout")
}

// fakeLocker is a Locker whose locks always succeed at once.
type fakeLocker struct{ closed *atomic.Int32 }

func (l *fakeLocker) Mutex(string) Mutex { return fakeMutex{} }
func (l *fakeLocker) Close() error       { l.closed.Add(1); return nil }

type fakeMutex struct{}

func (fakeMutex) Lock(context.Context) error   { return nil }
func (fakeMutex) Unlock(context.Context) error { return nil }

func TestClients(t *testing.T) {
	var opened int
	var closed atomic.Int32
	lib := Library{ID: "fake", Name: "fake", Open: func([]string, time.Duration, time.Duration, int) (Locker, error) {
		opened++
		return &fakeLocker{closed: &closed}, nil
	}}
	s := &suite{cfg: DefaultConfig(), lockers: map[string]Locker{}, own: map[string][]Locker{}}
	ctx := context.Background()
	shared := &fakeLocker{closed: &closed}
	got, err := s.clients(ctx, lib, shared, SharedClient, 3)
	if err != nil || len(got) != 3 || got[0] != shared || got[2] != shared || opened != 0 {
		t.Fatalf("clients(shared, 3) = %v, %v with %d opened; want the shared Locker 3 times", got, err, opened)
	}
	own3, err := s.clients(ctx, lib, shared, ClientPerContender, 3)
	if err != nil || len(own3) != 3 || opened != 3 {
		t.Fatalf("clients(per contender, 3) = %v, %v with %d opened; want 3 opened", own3, err, opened)
	}
	own5, err := s.clients(ctx, lib, shared, ClientPerContender, 5)
	if err != nil || len(own5) != 5 || opened != 5 || own5[0] != own3[0] {
		t.Fatalf("clients(per contender, 5) = %v, %v with %d opened; want the 3 reused and 2 more opened", own5, err, opened)
	}
	for i, a := range own5 {
		for _, b := range own5[i+1:] {
			if a == b || a == shared {
				t.Fatalf("contenders share a client: %v", own5)
			}
		}
	}
	s.closeOwn()
	if closed.Load() != 5 || len(s.own) != 0 {
		t.Errorf("closeOwn closed %d of 5 clients, %d libraries left", closed.Load(), len(s.own))
	}
}
