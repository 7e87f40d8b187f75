package dlm_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// upgradeMaxWait is how long a Lock call of either version may wait for the
// lock in a fleet in the middle of an upgrade, on a machine at a quiet pace
// (see CHANGELOG.md, "Upgrading a fleet"); upgradeWaitSlacks is how many of
// the pace's slack ([redistest.Pace.Slack]) the bound stretches to on a
// machine too slow for it.
const (
	upgradeMaxWait    = 2 * time.Second
	upgradeWaitSlacks = 40
)

// TestUpgradeFleet runs a fleet in the middle of an upgrade on one key: a
// process of the previous release (emulated by its scripts and its way of
// waiting, upgrade_previous_test.go) and a Manager of this one, three
// callers each, take turns for a few seconds: with Lock in the default
// mode, with Lock and fairness, and as candidates of an election. The two
// layouts are kept apart (the previous broadcast wake channel and line
// keys, this release's lines and manager channels), and what both read is
// the lock key itself: no two of them ever hold the lock at once. And
// neither version's callers starve the other's: every call, of either
// version, obtains the lock within upgradeMaxWait of asking (calls still
// waiting when the fleet stops count with the time they waited), stretched
// to the pace measured on the run where the machine is too slow for it.
// The log gives each version's grants and its calls' longest and 99th
// percentile waits.
//
// A release of this one hands a key to a waiter in its line only while
// nobody listens on the broadcast channel, where the previous release's
// waiters listen; with them listening, it frees the key for all and
// announces it there, as the previous release did. A refusal tells the
// waiters of this one that others listen on the broadcast channel: they
// keep their retry pace and widen their watch to that channel
// (wake.Waker.Widen), where one node's announcement of a release — the
// previous release's fair releases, which name its own waiter, included —
// wakes them as it wakes the previous release's waiters, at the next
// release once a refused attempt's gap has passed.
//
// The TTL is the default (10 s): a key left behind costs its TTL, which
// the bound catches. Node timeouts are the default's, stretched to the
// pace.
func TestUpgradeFleet(t *testing.T) {
	t.Parallel()
	const span = 6 * time.Second
	for _, mode := range []upgradeMode{upgradePlain, upgradeFair, upgradeElection} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, 3)
			pace := redistest.MeasurePace(t, srvs[0])
			nt := pace.Stretch(derivedNodeTimeout)
			opts := []dlm.ManagerOption{dlm.WithNodeTimeout(nt)}
			if mode == upgradeFair {
				opts = append(opts, dlm.WithFairness(dlm.Fairness{}))
			}
			m := redisManager(t, srvs, opts...)
			prev := newPreviousProcess(t, srvs, mode, "fleet", dlm.DefaultTTL, nt)
			var e *dlm.Election
			if mode == upgradeElection {
				var err error
				if e, err = m.Election("fleet"); err != nil {
					t.Fatal(err)
				}
			}
			// lockers[v] takes the lock as a caller of version v (0 this
			// release, 1 the previous), and returns the end of its
			// validity and how to release it.
			lockers := [2]func(ctx context.Context) (time.Time, func(), error){
				func(ctx context.Context) (time.Time, func(), error) {
					if e != nil {
						ld, err := e.Campaign(ctx, "this")
						if err != nil {
							return time.Time{}, nil, err
						}
						return ld.Until(), func() { ld.Resign(context.Background()) }, nil
					}
					l, err := m.Lock(ctx, "fleet")
					if err != nil {
						return time.Time{}, nil, err
					}
					return l.Until(), func() { l.Unlock(context.Background()) }, nil
				},
				func(ctx context.Context) (time.Time, func(), error) {
					g := prev.Lock(ctx)
					if g == nil {
						return time.Time{}, nil, ctx.Err()
					}
					return g.until, func() { prev.Unlock(g) }, nil
				},
			}
			var fleet upgradeFleet
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var wg sync.WaitGroup
			for v := range lockers {
				for range 3 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						fleet.caller(ctx, t, v, lockers[v])
					}()
				}
			}
			stalls := fleet.watchStalls(ctx, t, srvs, prev.rk)
			// The machine's pace through the run: the median of samples
			// taken every 200 ms.
			var slacks []time.Duration
			for end := time.Now().Add(span); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
				slacks = append(slacks, redistest.MeasurePace(t, srvs[0]).Slack())
			}
			stop()
			wg.Wait()
			<-stalls
			slices.Sort(slacks)
			slack := slacks[len(slacks)/2]
			bound := max(upgradeMaxWait, upgradeWaitSlacks*slack)
			if n := fleet.overlaps.Load(); n > 0 {
				t.Errorf("%d grants overlapped another holder's", n)
			}
			t.Logf("%s, %v, median slack %v (of %v to %v): %s", mode, span, slack, slacks[0], slacks[len(slacks)-1], fleet.report())
			for v, who := range []string{"this release", "the previous release"} {
				w := &fleet.waits[v]
				if w.grants == 0 {
					t.Errorf("the callers of %s obtained the lock 0 times in %v; want progress for both versions", who, span)
				}
				if len(w.all) == 0 {
					t.Errorf("the callers of %s made no call", who)
				} else if longest := slices.Max(w.all); longest > bound {
					t.Errorf("a call of %s waited %v for the lock; want at most %v (%v, or %d× the pace's median slack %v)",
						who, longest.Round(time.Millisecond), bound, upgradeMaxWait, upgradeWaitSlacks, slack)
				}
			}
		})
	}
}

// upgradeFleet records what the callers of a fleet in the middle of an
// upgrade met: the calls' waits and the grants of each version (0 this
// release, 1 the previous), and grants that overlapped another holder's.
type upgradeFleet struct {
	inside    atomic.Int32
	overlaps  atomic.Int64
	lastGrant atomic.Int64 // unix ns of the last grant

	mu    sync.Mutex
	waits [2]upgradeWaits
}

// upgradeWaits are one version's waits: every call's, and its grants.
type upgradeWaits struct {
	all    []time.Duration
	grants int
}

// caller takes the lock with lock over and over until ctx ends, holding it
// a millisecond each time, and records each call's wait for version v: a
// call still waiting when ctx ends counts with the time it waited.
func (f *upgradeFleet) caller(ctx context.Context, t *testing.T, v int, lock func(context.Context) (time.Time, func(), error)) {
	for ctx.Err() == nil {
		start := time.Now()
		until, unlock, err := lock(ctx)
		waited := time.Since(start)
		f.mu.Lock()
		f.waits[v].all = append(f.waits[v].all, waited)
		if err == nil {
			f.waits[v].grants++
		}
		f.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("a caller of version %d: %v", v, err)
			}
			return
		}
		f.lastGrant.Store(time.Now().UnixNano())
		if f.inside.Add(1) != 1 {
			f.overlaps.Add(1)
		}
		time.Sleep(time.Millisecond)
		if time.Now().After(until) {
			t.Errorf("a critical section of version %d outlived its lock's validity", v)
		}
		f.inside.Add(-1)
		unlock()
	}
}

// watchStalls logs what the nodes hold while no caller has obtained the
// lock for a second, once per stall, until ctx ends; the channel it
// returns is closed when it has.
func (f *upgradeFleet) watchStalls(ctx context.Context, t *testing.T, srvs []*redistest.Server, rk string) <-chan struct{} {
	done := make(chan struct{})
	f.lastGrant.Store(time.Now().UnixNano())
	go func() {
		defer close(done)
		var logged int64
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			last := f.lastGrant.Load()
			if time.Since(time.Unix(0, last)) < time.Second || logged == last {
				continue
			}
			logged = last
			var held []string
			for i, s := range srvs {
				v, _ := s.Do("GET", rk)
				ttl, _ := s.Do("PTTL", rk)
				held = append(held, fmt.Sprintf("node %d: %v (PTTL %v)", i, v, ttl))
			}
			t.Logf("no grant for %v: %s", time.Since(time.Unix(0, last)).Round(time.Millisecond), strings.Join(held, "; "))
		}
	}()
	return done
}

// report gives each version's grants, calls, and longest and 99th
// percentile waits.
func (f *upgradeFleet) report() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for v, who := range []string{"this release", "previous"} {
		w := f.waits[v]
		all := slices.Clone(w.all)
		slices.Sort(all)
		var p99, longest time.Duration
		if len(all) > 0 {
			p99, longest = all[(len(all)*99+99)/100-1], all[len(all)-1]
		}
		parts = append(parts, fmt.Sprintf("%s %d grants of %d calls, waits max %v p99 %v", who, w.grants, len(all),
			longest.Round(time.Millisecond), p99.Round(time.Millisecond)))
	}
	return strings.Join(parts, "; ")
}
