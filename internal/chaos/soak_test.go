package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

var soakMinGrants = flag.Int64("chaos.mingrants", 0, "TestSoak fails with fewer checked grants than this (make soak: 100000)")

// The soak's keys: the mutex, read-write locks and semaphores of soakLimit
// permits, with TTLs from 200 to 800 ms, two of each, so that 27 callers
// keep a grant going on most of them; and two elections.
const (
	soakLimit    = 2
	electionPref = "lead-"
)

var (
	soakKeys = []KeySpec{
		{"m200", 200 * time.Millisecond}, {"m300", 300 * time.Millisecond}, {"m500", 500 * time.Millisecond}, {"m800", 800 * time.Millisecond},
		{"n200", 200 * time.Millisecond}, {"n300", 300 * time.Millisecond}, {"n500", 500 * time.Millisecond}, {"n800", 800 * time.Millisecond},
		{RWPrefix + "300", 300 * time.Millisecond}, {RWPrefix + "500", 500 * time.Millisecond},
		{RWPrefix + "b300", 300 * time.Millisecond}, {RWPrefix + "b500", 500 * time.Millisecond},
		{SemPrefix + "300", 300 * time.Millisecond}, {SemPrefix + "600", 600 * time.Millisecond},
		{SemPrefix + "b300", 300 * time.Millisecond}, {SemPrefix + "b600", 600 * time.Millisecond},
	}
	soakElections = []string{electionPref + "a", electionPref + "b"}
	soakLeaderTTL = []time.Duration{300 * time.Millisecond, 500 * time.Millisecond, 800 * time.Millisecond}
	// soakAutoKeys are held with WithAutoExtend, by a holder per manager
	// that takes several at once, so that the manager extends them
	// together, in batches, under the faults; the holders contend for them.
	soakAutoKeys = func() []KeySpec {
		var keys []KeySpec
		for i := range 16 {
			keys = append(keys, KeySpec{fmt.Sprintf("%s300-%d", autoPref, i), 300 * time.Millisecond},
				KeySpec{fmt.Sprintf("%s500-%d", autoPref, i), 500 * time.Millisecond})
		}
		return keys
	}()
)

// autoPref starts the names of the keys held with auto-extension.
const autoPref = "auto-"

// soakScale is what the soak multiplies its node timeout's floor, key TTLs
// and leader TTLs by: 1 for make chaos and make soak (a minute or more), 4
// for the seconds-long form inside make test. That form must pass with
// every core busy (make test-load), where 27 callers, 9 candidates and the
// fault proxies under -race need more than chaosNodeTimeout per request: at
// 100 ms it got no grant at all, within 5 s or 20 s. The TTLs grow with the
// timeout, so that every key still outlives a request (a TTL no longer than
// the node timeout is refused as invalid) and keeps the same ratio of TTL
// to timeout as the long soak. The run's calibration stretches the result
// further on a machine slower than that (calibrate).
func soakScale() time.Duration {
	if *soakFor < time.Minute {
		return 4
	}
	return 1
}

// soakCallers returns three callers of each manager, which contend in the
// same process: two with the same options (the plain acquire, SET NX, when
// the key is free; a lock can be handed over between them without a round
// trip) and one with WithFencing (the acquire script; never handed a lock
// of the others, whose lease differs).
func soakCallers(managers []*dlm.Manager, backends []string) []*Client {
	var out []*Client
	for i, m := range managers {
		for j, c := range []struct {
			name string
			opts []dlm.Option
		}{{"plain", nil}, {"plain2", nil}, {"fenced", []dlm.Option{dlm.WithFencing()}}} {
			out = append(out, &Client{ID: 3*i + j, Backend: backends[i], Name: fmt.Sprintf("c%d/%s/%s", i, backends[i], c.name),
				Locker: SharedLocker{M: m, Opts: c.opts, ReadShare: 0.7, Limit: soakLimit}})
		}
	}
	return out
}

// campaign runs one candidate until ctx ends: it campaigns for a random
// election with a random TTL (at cal's scale), leads for a random time or until its
// leadership is lost, records the term in h, and resigns.
func campaign(ctx context.Context, m *dlm.Manager, name string, h *History, r *rand.Rand, cal calibration, wins, losses *atomic.Int64) {
	for ctx.Err() == nil {
		el := soakElections[r.IntN(len(soakElections))]
		ttl := cal.of(soakLeaderTTL[r.IntN(len(soakLeaderTTL))] * soakScale())
		cctx, cancel := context.WithTimeout(ctx, cal.of(2*time.Second))
		start := time.Now()
		var ld *dlm.Leadership
		election, err := m.Election(el, dlm.WithTTL(ttl))
		if err == nil {
			ld, err = election.Campaign(cctx, name)
		}
		cancel()
		if err != nil {
			sleep(ctx, time.Duration(r.IntN(20))*time.Millisecond)
			continue
		}
		wins.Add(1)
		id := h.Grant(el, name, start, time.Now(), ld.Until(), ld.Term())
		t := time.NewTimer(time.Duration(r.Float64() * 1.5 * float64(ttl)))
		select {
		case <-t.C:
		case <-ld.Lost():
			losses.Add(1)
		case <-ctx.Done():
		}
		t.Stop()
		h.Release(id, time.Now(), ld.Until())
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cal.of(2*time.Second))
		_ = ld.Resign(rctx)
		cancel()
	}
}

// holdAuto runs one holder of auto-extended locks until ctx ends: it takes
// a few of keys at once with WithAutoExtend, holds each for one to four of
// its TTLs — stopping the moment its Lost closes — records each grant in h
// with the validity the lock reports when the holder stops acting, and
// unlocks it.
func holdAuto(ctx context.Context, m *dlm.Manager, name string, keys []KeySpec, h *History, r *rand.Rand, cal calibration, holds, lost *atomic.Int64) {
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		for _, k := range keys {
			if r.IntN(2) == 0 {
				continue
			}
			hold := time.Duration((1 + 3*r.Float64()) * float64(k.TTL))
			tctx, cancel := context.WithTimeout(ctx, cal.of(2*time.Second))
			start := time.Now()
			l, err := m.TryLock(tctx, k.Name, dlm.WithTTL(k.TTL), dlm.WithAutoExtend(dlm.AutoExtend{}))
			cancel()
			if err != nil {
				continue
			}
			holds.Add(1)
			id := h.Grant(k.Name, name, start, time.Now(), l.Until(), l.Token())
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.NewTimer(hold)
				select {
				case <-t.C:
				case <-l.Lost():
					lost.Add(1)
				case <-ctx.Done():
				}
				t.Stop()
				h.Release(id, time.Now(), l.Until())
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cal.of(2*time.Second))
				_ = l.Unlock(uctx)
				cancel()
			}()
		}
		wg.Wait()
		sleep(ctx, time.Duration(r.IntN(20))*time.Millisecond)
	}
}

// renewalCounter is the managers' hook: it counts the rounds of batched
// auto-extension, the locks they carried, the rounds that carried more
// than one, and those reported behind.
type renewalCounter struct {
	rounds, locks, batched, behind atomic.Int64
}

func (c *renewalCounter) OnEvent(_ context.Context, e *dlm.Event) {
	if e.Kind != dlm.EventRenewal {
		return
	}
	c.rounds.Add(1)
	c.locks.Add(int64(e.For))
	if e.For > 1 {
		c.batched.Add(1)
	}
	if e.Err != nil {
		c.behind.Add(1)
	}
}

// soakResult is what the soak's epochs found.
type soakResult struct {
	stats                       Stats
	faults                      map[string]int64
	byKind                      map[string]int64
	exclusive                   Report
	lin                         porcupine.CheckResult
	linOps                      int
	linTime                     time.Duration
	violations                  int
	mostReaders, mostPermits    int
	leaderWins, leadershipLosts int64
	autoHolds, autoLost         int64
	phases                      phases
}

// soakKinds are the kinds of grant the soak must show before its checks
// mean anything, as soakKind names them.
var soakKinds = []string{"mutex", "election", "auto-extended", "semaphore", "rw-" + Exclusive.String(), "rw-" + Shared.String()}

// soakKind names the kind of a soak's grant.
func soakKind(g Grant) string {
	switch {
	case strings.HasPrefix(g.Key, electionPref):
		return "election"
	case strings.HasPrefix(g.Key, autoPref):
		return "auto-extended"
	case g.Mode == Permit:
		return "semaphore"
	case strings.HasPrefix(g.Key, RWPrefix):
		return "rw-" + g.Mode.String()
	}
	return "mutex"
}

// soakEpoch runs the callers' workload and the candidates on keys renamed
// with suffix under the injector's faults for d, or, when covered is not
// nil, for at least d and until covered reports true of the epoch's
// history (runPhases: without faults at the end if they kept it short);
// then it checks the history: the mutex and the elections with the exact
// checker (no overlap, terms and tokens increasing) and porcupine, the
// read-write locks and semaphores with the shared checker (no writer with
// anyone, never more than the limit of permits). TTLs and waits are at
// cal's scale and soakScale's.
func soakEpoch(t *testing.T, c *Cluster, managers []*dlm.Manager, callers []*Client, cal calibration, d time.Duration, suffix string, r *rand.Rand, res *soakResult, covered func(*History) bool) {
	t.Helper()
	keys := make([]KeySpec, len(soakKeys))
	for i, k := range soakKeys {
		keys[i] = KeySpec{k.Name + suffix, cal.of(k.TTL * soakScale())}
	}
	hist := NewHistory()
	w := &Workload{
		Clients: callers, Keys: keys, History: hist, LockTimeout: cal.of(2 * time.Second),
		Hold: 0.2, Overrun: 0.03, Pause: 0.03, Crash: 0.02, Extend: 0.2, VaryExtend: true, PauseBeyond: cal.of(100 * time.Millisecond * soakScale()),
		Seed: r.Uint64(),
	}
	// Extensions reach twice a key's TTL: a killed node stays down
	// longer than that.
	in := &Injector{C: c, MaxTTL: 2 * maxTTL(keys), Kinds: faultKinds(t), MaxKilled: 1, Rand: rand.New(rand.NewPCG(r.Uint64(), 1)),
		Logf: func(f string, a ...any) { t.Logf("fault: "+f, a...) }}
	var wins, losts atomic.Int64
	seeds := make([]uint64, len(managers)) // r is not safe for the goroutines
	for i := range seeds {
		seeds[i] = r.Uint64()
	}
	autoKeys := make([]KeySpec, len(soakAutoKeys))
	for i, k := range soakAutoKeys {
		autoKeys[i] = KeySpec{k.Name + suffix, cal.of(k.TTL * soakScale())}
	}
	var holds, autoLost atomic.Int64
	var stats Stats
	work := func(ctx context.Context) {
		var wg sync.WaitGroup
		for i, m := range managers {
			wg.Add(2)
			go func() {
				defer wg.Done()
				// The elections' names get the epoch's suffix through
				// the history's keys only: each epoch has a fresh history.
				campaign(ctx, m, fmt.Sprintf("cand%d", i), hist, rand.New(rand.NewPCG(seeds[i], uint64(i))), cal, &wins, &losts)
			}()
			go func() {
				defer wg.Done()
				holdAuto(ctx, m, fmt.Sprintf("auto%d", i), autoKeys, hist, rand.New(rand.NewPCG(seeds[i], uint64(i)+100)), cal, &holds, &autoLost)
			}()
		}
		stats = w.Run(ctx)
		wg.Wait()
	}
	var cover func() bool
	if covered != nil {
		cover = func() bool { return covered(hist) }
	}
	ph := runPhases(t, c, in, d, false, cover, work)
	res.phases.faults += ph.faults
	res.phases.calm += ph.calm
	res.phases.coveredUnderFaults, res.phases.covered = ph.coveredUnderFaults, ph.covered
	res.phases.calmPace, res.phases.calmCap = ph.calmPace, ph.calmCap
	res.leaderWins += wins.Load()
	res.leadershipLosts += losts.Load()
	res.autoHolds += holds.Load()
	res.autoLost += autoLost.Load()
	for k, v := range in.Counts {
		res.faults[k] += v
	}
	res.faults[FaultClientPausePastValidity] += stats.Pauses
	res.faults[FaultHolderCrash] += stats.Crashes
	res.stats.Attempts += stats.Attempts
	res.stats.Grants += stats.Grants
	res.stats.ExtendsOK += stats.ExtendsOK
	res.stats.ExtendsErr += stats.ExtendsErr
	for k, v := range stats.Errors {
		res.stats.Errors[k] += v
	}
	for k, v := range stats.FirstErrors {
		if _, seen := res.stats.FirstErrors[k]; !seen {
			res.stats.FirstErrors[k] = v
		}
	}

	var exclusive, rw, sem []Grant
	for _, g := range hist.Grants() {
		kind := soakKind(g)
		res.byKind[kind]++
		switch kind {
		case "semaphore":
			sem = append(sem, g)
		case "rw-" + Exclusive.String(), "rw-" + Shared.String():
			rw = append(rw, g)
		default:
			exclusive = append(exclusive, g)
		}
	}
	rep := Check(exclusive)
	start := time.Now()
	lin, ops := CheckLinearizable(exclusive, time.Minute)
	res.linTime += time.Since(start)
	res.linOps += ops
	if lin != porcupine.Ok {
		res.lin = lin
	}
	if (lin == porcupine.Illegal) != (len(rep.Violations) > 0) || lin == porcupine.Unknown {
		t.Errorf("porcupine says %v over %d operations; the exact checker found %d violations", lin, ops, len(rep.Violations))
	}
	res.exclusive.Ops += rep.Ops
	res.exclusive.Grants += rep.Grants
	res.exclusive.Tokens += rep.Tokens
	for _, v := range rep.Violations {
		t.Errorf("violation: %v", v)
	}
	rwr, semr, writers := CheckShared(rw, 1), CheckShared(sem, soakLimit), Check(onlyExclusive(rw))
	for _, v := range append(rwr.Violations, semr.Violations...) {
		t.Errorf("violation: %v", v)
	}
	for _, v := range writers.Violations {
		t.Errorf("violation among writers: %v", v)
	}
	res.violations += len(rep.Violations) + len(rwr.Violations) + len(semr.Violations) + len(writers.Violations)
	res.mostReaders = max(res.mostReaders, rwr.MostShared)
	res.mostPermits = max(res.mostPermits, semr.MostShared)
	t.Logf("epoch %s (%v): %d grants; so far %s, %d violations", suffix, ph, len(hist.Grants()), FormatCounts(res.byKind), res.violations)
}

// TestSoak runs, for -chaos.soak, the real manager through all three
// backends under every fault, in epochs of at most a minute with fresh keys
// (so that each history porcupine checks stays well under 20k operations
// per key): the mutex, read-write locks and semaphores, three callers per
// manager contending in the process with different options (plain and
// fenced acquires; hand-overs), extensions to varying TTLs, two elections
// with a candidate per manager, and a holder per manager of several locks
// at once under auto-extension, which the manager extends in batches (it
// fails when no round carried two). Every grant is checked: no two
// holders of the mutex, never two leaders, no writer with anyone, never
// more than the limit of permits, tokens and terms increasing; porcupine
// checks the mutex and the elections again. make soak runs it for 25
// minutes and requires -chaos.mingrants checked grants.
//
// The last epoch goes on until the soak has checked enough to mean
// something — a grant of every kind, a round of auto-extension carrying
// several locks, -chaos.mingrants checked grants — without faults at the
// end if they kept it short, and the soak fails for want of grants only
// when that never comes even without faults (runPhases). The node timeout
// (chaosNodeTimeout×soakScale at least), TTLs and waits are calibrated on
// the cluster's pace; grants per second are a figure.
func TestSoak(t *testing.T) {
	snap := leakcheck.Take()
	r := rand.New(rand.NewPCG(pickSeed(t), 1))
	c := StartCluster(t, chaosNodes, chaosClients)
	cal := calibrate(t, c, chaosNodeTimeout*soakScale())
	managers := make([]*dlm.Manager, chaosClients)
	backends := make([]string, chaosClients)
	renewals := &renewalCounter{}
	for i := range managers {
		backends[i] = Backends[i%len(Backends)]
		urls := make([]string, 0, chaosNodes)
		for _, a := range c.Net.Addrs(i) {
			urls = append(urls, NodeURL(backends[i], a))
		}
		m, err := dlm.Open(urls, dlm.WithNodeTimeout(cal.nodeTimeout), dlm.WithRetry(0, dlm.ExponentialBackoff(5*time.Millisecond, 50*time.Millisecond)),
			dlm.WithHook(renewals))
		if err != nil {
			t.Fatal(err)
		}
		managers[i] = m
	}
	callers := soakCallers(managers, backends)
	res := soakResult{faults: map[string]int64{}, byKind: map[string]int64{}, lin: porcupine.Ok,
		stats: Stats{Errors: map[string]int64{}, FirstErrors: map[string]string{}}}
	const epoch = time.Minute
	began := time.Now()
	// covered: the epochs so far and this one's history show a grant of
	// every kind, the renewals a batch, and the count is reached.
	covered := func(h *History) bool {
		byKind := map[string]int64{}
		n := int64(0)
		for _, g := range h.Grants() {
			byKind[soakKind(g)]++
			n++
		}
		for _, k := range soakKinds {
			if res.byKind[k]+byKind[k] == 0 {
				return false
			}
			n += res.byKind[k]
		}
		return renewals.batched.Load() > 0 && n >= *soakMinGrants
	}
	for left, i := *soakFor, 0; left > 0; left, i = left-epoch, i+1 {
		var cover func(*History) bool
		if left <= epoch {
			cover = covered
		}
		soakEpoch(t, c, managers, callers, cal, min(left, epoch), fmt.Sprintf("-soak%d", i), r, &res, cover)
	}
	checked := int64(0)
	for _, n := range res.byKind {
		checked += n
	}
	elapsed := time.Since(began)
	figure(t, "chaos: test=TestSoak nodes=%d managers=%d callers=%d node_timeout=%v duration=%v checked_grants=%d grants=%s lock_calls=%d extends=%d/%d leaders=%d leaderships_lost=%d auto_holds=%d auto_lost=%d renewal_rounds=%d renewal_locks=%d batched_rounds=%d behind_rounds=%d most_readers=%d most_permits=%d limit=%d faults_total=%d faults=%s violations=%d porcupine=%s porcupine_ops=%d porcupine_time=%v lock_errors=%s grants_per_s=%.1f %s %s",
		chaosNodes, len(managers), len(callers), cal.nodeTimeout, elapsed.Round(time.Second), checked, FormatCounts(res.byKind), res.stats.Attempts,
		res.stats.ExtendsOK, res.stats.ExtendsOK+res.stats.ExtendsErr, res.leaderWins, res.leadershipLosts,
		res.autoHolds, res.autoLost, renewals.rounds.Load(), renewals.locks.Load(), renewals.batched.Load(), renewals.behind.Load(),
		res.mostReaders, res.mostPermits, soakLimit,
		sum(res.faults), FormatCounts(res.faults), res.violations, res.lin, res.linOps, res.linTime.Round(time.Millisecond), FormatCounts(res.stats.Errors),
		float64(checked)/elapsed.Seconds(), res.phases.figures(), cal.figures())
	if n := res.stats.Errors["invalid"]; n > 0 {
		// A key whose every Lock is refused is a key the check never sees.
		t.Errorf("%d Lock calls refused as invalid (first: %s); want none: the soak's own options are wrong", n, res.stats.FirstErrors["invalid"])
	}
	if checked < *soakMinGrants {
		t.Errorf("%d checked grants in %v; want at least %d", checked, res.phases, *soakMinGrants)
	}
	none := false
	for _, k := range soakKinds {
		if res.byKind[k] == 0 {
			t.Errorf("no %s grant in %v: the soak made no progress on them even without faults", k, res.phases)
			none = true
		}
	}
	if renewals.batched.Load() == 0 {
		t.Errorf("no round of auto-extension carried more than one lock in %v; want the batches exercised", res.phases)
	}
	if none {
		for class, msg := range res.stats.FirstErrors {
			t.Logf("first %s error: %s", class, msg)
		}
	}
	for _, m := range managers {
		if err := m.Close(); err != nil {
			t.Errorf("Manager.Close: %v", err)
		}
	}
	if err := c.Net.Close(); err != nil {
		t.Errorf("closing proxies: %v", err)
	}
	snap.Check(t, 10*time.Second)
}
