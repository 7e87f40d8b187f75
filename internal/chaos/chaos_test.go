package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

var (
	fastFor   = flag.Duration("chaos.fast", 25*time.Second, "how long TestChaosFast applies faults under contention")
	soakFor   = flag.Duration("chaos.soak", 5*time.Second, "how long TestSoak runs; make chaos sets 5m or more")
	seed      = flag.Uint64("chaos.seed", 0, "random seed of the workload and the faults (0: from the clock)")
	sharedFor = flag.Duration("chaos.shared", 15*time.Second, "how long TestChaosShared applies faults to read-write locks and semaphores")
	faults    = flag.String("chaos.faults", "all", "comma-separated fault kinds the injector applies, or all, or none")
)

// faultKinds returns the kinds -chaos.faults names.
func faultKinds(t testing.TB) []string {
	switch *faults {
	case "all":
		return AllFaults
	case "none", "":
		return nil
	}
	kinds := strings.Split(*faults, ",")
	for _, k := range kinds {
		if !slices.Contains(AllFaults, k) {
			t.Fatalf("-chaos.faults: unknown fault %q; known: %s", k, strings.Join(AllFaults, ","))
		}
	}
	return kinds
}

// The chaos configuration: five nodes, nine clients (three per backend),
// three keys with short TTLs.
const (
	chaosNodes   = 5
	chaosClients = 9
)

var chaosKeys = []KeySpec{{"k300", 300 * time.Millisecond}, {"k500", 500 * time.Millisecond}, {"k800", 800 * time.Millisecond}}

func maxTTL(keys []KeySpec) time.Duration {
	m := time.Duration(0)
	for _, k := range keys {
		m = max(m, k.TTL)
	}
	return m
}

func pickSeed(t testing.TB) uint64 {
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -chaos.seed=%d)", s, s)
	return s
}

// epochResult is what one run of the workload under faults found.
type epochResult struct {
	stats   Stats
	faults  map[string]int64
	report  Report
	lin     porcupine.CheckResult
	linOps  int
	linTime time.Duration
	exact   time.Duration
	phases  phases
}

// fastCoverage is what TestChaosFast's run must show before its checks
// mean anything: fastMinGrants grants, some through each backend, and
// every fault kind applied.
const fastMinGrants = 50

// chaosEpoch runs the workload on keys (the chaos keys at cal's scale,
// renamed with suffix) while the injector applies faults, for at least d
// and until it has fastMinGrants grants, some through every backend, and
// every fault kind was applied (runPhases: without faults at the end if
// they kept the grants short), then checks the history with both checkers.
func chaosEpoch(t *testing.T, c *Cluster, clients []*Client, cal calibration, d time.Duration, suffix string, r *rand.Rand) epochResult {
	t.Helper()
	keys := cal.keys(chaosKeys)
	for i := range keys {
		keys[i].Name += suffix
	}
	w := &Workload{
		Clients: clients, Keys: keys, History: NewHistory(), LockTimeout: cal.of(2 * time.Second),
		Hold: 0.5, Overrun: 0.05, Pause: 0.05, Crash: 0.03, Extend: 0.2, PauseBeyond: cal.of(100 * time.Millisecond),
		Seed: r.Uint64(),
	}
	in := &Injector{C: c, MaxTTL: maxTTL(keys), Kinds: faultKinds(t), MaxKilled: 1, Rand: rand.New(rand.NewPCG(r.Uint64(), 1)),
		Logf: func(f string, a ...any) { t.Logf("fault: "+f, a...) }}
	covered := func() bool {
		if w.History.Len() < fastMinGrants {
			return false
		}
		by := w.GrantsByBackend()
		for _, b := range Backends {
			if by[b] == 0 {
				return false
			}
		}
		return true
	}
	var stats Stats
	ph := runPhases(t, c, in, d, true, covered, func(ctx context.Context) { stats = w.Run(ctx) })
	res := epochResult{stats: stats, faults: in.Counts, phases: ph}
	res.faults[FaultClientPausePastValidity] += res.stats.Pauses
	res.faults[FaultHolderCrash] += res.stats.Crashes
	grants := w.History.Grants()
	start := time.Now()
	res.report = Check(grants)
	res.exact = time.Since(start)
	start = time.Now()
	res.lin, res.linOps = CheckLinearizable(grants, time.Minute)
	res.linTime = time.Since(start)
	if (res.lin == porcupine.Illegal) != (len(res.report.Violations) > 0) || res.lin == porcupine.Unknown {
		t.Errorf("porcupine says %v over %d operations; the exact checker found %d violations", res.lin, res.linOps, len(res.report.Violations))
	}
	for _, v := range res.report.Violations {
		t.Errorf("violation: %v", v)
	}
	return res
}

func (e *epochResult) add(o epochResult) {
	if e.faults == nil {
		e.faults = map[string]int64{}
		e.stats = Stats{Errors: map[string]int64{}, ByBackend: map[string]int64{}}
		e.lin = porcupine.Ok
	}
	for k, v := range o.faults {
		e.faults[k] += v
	}
	for k, v := range o.stats.Errors {
		e.stats.Errors[k] += v
	}
	for k, v := range o.stats.ByBackend {
		e.stats.ByBackend[k] += v
	}
	e.stats.Attempts += o.stats.Attempts
	e.stats.Grants += o.stats.Grants
	e.stats.LateWrites += o.stats.LateWrites
	e.stats.ExtendsOK += o.stats.ExtendsOK
	e.stats.ExtendsErr += o.stats.ExtendsErr
	e.report.Ops += o.report.Ops
	e.report.Grants += o.report.Grants
	e.report.Keys += o.report.Keys
	e.report.Violations = append(e.report.Violations, o.report.Violations...)
	if o.lin != porcupine.Ok {
		e.lin = o.lin
	}
	e.linOps += o.linOps
	e.linTime += o.linTime
	e.exact += o.exact
	e.phases.faults += o.phases.faults
	e.phases.calm += o.phases.calm
	e.phases.coveredUnderFaults = o.phases.coveredUnderFaults
	e.phases.covered = o.phases.covered
	e.phases.calmPace, e.phases.calmCap = o.phases.calmPace, o.phases.calmCap
}

func sum(m map[string]int64) int64 {
	n := int64(0)
	for _, v := range m {
		n += v
	}
	return n
}

// figures prints the chaos figures line.
func (e *epochResult) figures(t *testing.T, test string, cal calibration) {
	t.Helper()
	keys := cal.keys(chaosKeys)
	d := e.phases.total()
	figure(t, "chaos: test=%s nodes=%d clients=%d keys=%d ttl=%v..%v node_timeout=%v duration=%v ops=%d grants=%d lock_calls=%d faults_total=%d faults=%s violations=%d porcupine=%s porcupine_ops=%d porcupine_time=%v exact_time=%v late_writes=%d extends=%d/%d grants_by_backend=%s lock_errors=%s grants_per_s=%.1f %s %s",
		test, chaosNodes, chaosClients, len(keys), keys[0].TTL, maxTTL(keys), cal.nodeTimeout, d.Round(time.Second),
		e.report.Ops, e.report.Grants, e.stats.Attempts, sum(e.faults), FormatCounts(e.faults), len(e.report.Violations),
		e.lin, e.linOps, e.linTime.Round(time.Millisecond), e.exact.Round(time.Microsecond), e.stats.LateWrites,
		e.stats.ExtendsOK, e.stats.ExtendsOK+e.stats.ExtendsErr, FormatCounts(e.stats.ByBackend), FormatCounts(e.stats.Errors),
		float64(e.report.Grants)/d.Seconds(), e.phases.figures(), cal.figures())
}

// chaosNodeTimeout is the floor of the chaos clients' node timeout, which
// the run's calibration stretches to the pace of its servers. The default,
// a twentieth of the TTL (15–40 ms here, clamped to at least 20 ms), is
// shorter than the tail latency of this 2-core machine under -race with
// nine clients and five servers (p99 25–35 ms measured), which turns healthy
// nodes into failures and muddies the liveness figures.
const chaosNodeTimeout = 100 * time.Millisecond

// startChaos starts the chaos cluster and its clients, whose node timeout
// and retries are calibrated on the cluster's pace.
func startChaos(t *testing.T) (*Cluster, []*Client, calibration) {
	t.Helper()
	c := StartCluster(t, chaosNodes, chaosClients)
	cal := calibrate(t, c, chaosNodeTimeout)
	return c, c.ManagerClients(dlm.WithNodeTimeout(cal.nodeTimeout),
		dlm.WithRetry(0, dlm.ExponentialBackoff(5*time.Millisecond, 50*time.Millisecond))), cal
}

// TestChaosFast runs the real manager, through all three backends, under
// every fault for at least -chaos.fast, and checks that no two clients ever
// believed they held a key at once (the exact checker and porcupine). The
// run goes on until it has checked enough to mean something (fastMinGrants
// grants, some through each backend, every fault kind applied), without
// faults at the end if they kept the grants short, and fails only when no
// grants come even then (runPhases). Then it shows liveness on real
// processes: a lock whose holder crashed is regained, with no overlap; with
// two of five nodes down nearly every attempt succeeds; with three down or
// black-holed every attempt fails with ErrUnavailable and Lock returns once
// its context ends. How fast is a figure here: TestRegainAfterHolderCrash
// and TestMajorityDown in package dlm prove the bounds on fake time.
func TestChaosFast(t *testing.T) {
	start := time.Now()
	snap := leakcheck.Take()
	r := rand.New(rand.NewPCG(pickSeed(t), 0))
	c, clients, cal := startChaos(t)
	var res epochResult
	res.add(chaosEpoch(t, c, clients, cal, *fastFor, "", r))
	res.figures(t, "TestChaosFast", cal)
	if !res.phases.covered {
		t.Errorf("only %d grants (%s) in %v: the workload made no progress even without faults", res.stats.Grants, FormatCounts(res.stats.ByBackend), res.phases)
		for class, msg := range res.stats.FirstErrors {
			t.Logf("first %s error: %s", class, msg)
		}
	}
	for _, b := range Backends {
		if res.stats.ByBackend[b] == 0 {
			t.Errorf("no grant through %s", b)
		}
	}
	for _, k := range faultKinds(t) {
		if res.faults[k] == 0 {
			t.Errorf("fault %s was never applied in %v", k, res.phases)
		}
	}
	regain(t, c, clients, cal)
	minorityDown(t, c, clients, cal)
	CloseClients(t, clients)
	if err := c.Net.Close(); err != nil {
		t.Errorf("closing proxies: %v", err)
	}
	snap.Check(t, 10*time.Second)
	t.Logf("TestChaosFast took %v", time.Since(start).Round(time.Millisecond))
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1))]
}

// regain shows that a lock comes back after its holder crashed, with no
// overlap: a holder takes the lock, works a little, and crashes (its manager
// closes with the lock held); a client already waiting for the lock obtains
// it once the keys expire. It must obtain it within a cap taken from the
// pace ([calmCap] past the TTL): that it comes back at all is the claim
// here; how soon after the crash is a figure, and
// TestRegainAfterHolderCrash (package dlm) proves on fake time that it is
// within the TTL and a backoff.
func regain(t *testing.T, c *Cluster, clients []*Client, cal calibration) {
	t.Helper()
	const rounds = 6
	ttl := cal.of(500 * time.Millisecond)
	p := clusterPace(t, c)
	bound := ttl + calmCap(p)
	h := NewHistory()
	var times []time.Duration
	for i := 0; i < rounds; i++ {
		key := fmt.Sprintf("regain-%d", i)
		holderBackend := Backends[i%len(Backends)]
		urls := make([]string, 0, chaosNodes)
		for _, a := range c.Net.Addrs(i % chaosClients) {
			urls = append(urls, NodeURL(holderBackend, a))
		}
		holder, err := dlm.Open(urls, dlm.WithTTL(ttl), dlm.WithNodeTimeout(cal.nodeTimeout))
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		hctx, cancel := context.WithTimeout(context.Background(), bound)
		l, err := holder.Lock(hctx, key, dlm.WithRetry(0, dlm.ExponentialBackoff(5*time.Millisecond, 50*time.Millisecond)))
		cancel()
		if err != nil {
			t.Fatalf("holder's Lock of a free key, retried for %v: %v", bound, err)
		}
		h.Grant(key, "holder/"+holderBackend, t0, time.Now(), l.Until(), 0) // never released
		waiter := clients[(i+1)%len(clients)]
		type result struct {
			at     time.Time
			lease  Lease
			err    error
			called time.Time
		}
		got := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			called := time.Now()
			lease, err := waiter.Locker.Lock(ctx, key, ttl)
			got <- result{time.Now(), lease, err, called}
		}()
		time.Sleep(time.Duration(rand.IntN(int(ttl / 2))))
		crashed := time.Now()
		if err := holder.Close(); err != nil { // the lock is left to expire
			t.Errorf("holder's Close: %v", err)
		}
		res := <-got
		if res.err != nil {
			t.Fatalf("waiter %s never regained the lock in %v (TTL %v, pace %v): %v", waiter.Name, bound, ttl, p, res.err)
		}
		id := h.Grant(key, waiter.Name, res.called, res.at, res.lease.Until(), 0)
		h.Release(id, time.Now(), res.lease.Until())
		_ = res.lease.Unlock(context.Background())
		times = append(times, res.at.Sub(crashed))
	}
	rep := Check(h.Grants())
	if len(rep.Violations) > 0 {
		t.Errorf("regain: violations %v", rep.Violations)
	}
	figure(t, "chaos: regain_ttl=%v regain_rounds=%d regain_p50=%v regain_max=%v regain_bound=%v violations=%d regain_max_over_ttl=%v",
		ttl, rounds, quantile(times, 0.5).Round(time.Millisecond), quantile(times, 1).Round(time.Millisecond), bound.Round(time.Millisecond), len(rep.Violations),
		(quantile(times, 1) - ttl).Round(time.Millisecond))
}

// timedOut reports whether err is a lock attempt's vote that failed only
// because some node requests outlived the node timeout, besides at most
// down failures of nodes known to be down.
func timedOut(err error, down int) bool {
	var qe *dlm.QuorumError
	if !errors.As(err, &qe) || qe.Against > 0 {
		return false
	}
	timeouts := 0
	// QuorumError unwraps to the chain of its node failures: each step's
	// head is one of them.
	for e := errors.Unwrap(qe.Err); e != nil; e = errors.Unwrap(e) {
		var ne *dlm.NodeError
		if errors.As(e, &ne) && errors.Is(ne.Err, context.DeadlineExceeded) {
			timeouts++
		}
	}
	return timeouts > 0 && qe.Failed-timeouts <= down
}

// minorityDown shows availability with two of five nodes killed (attempts
// succeed, nearly all of those that no live node's timeout failed), then
// with three (every attempt fails with ErrUnavailable, and Lock returns
// once its context ends, wrapping DeadlineExceeded), then with three
// black-holed (the same, by timeout rather than refusal), and that each
// client obtains a lock again once the partition heals. How fast the
// attempts fail is a figure; TestMajorityDown and TestFailFast (package
// dlm) prove the timing on fake time. Here every call must return within a
// cap taken from the pace ([calmCap]): it returns at all.
func minorityDown(t *testing.T, c *Cluster, clients []*Client, cal calibration) {
	t.Helper()
	ctx := context.Background()
	ttl := cal.of(500 * time.Millisecond)
	p := clusterPace(t, c)
	capped := calmCap(p)
	one := clients[:len(Backends)] // one client per backend
	c.Servers[3].Kill()
	c.Servers[4].Kill()
	// An attempt needs all three live nodes within the node timeout. One
	// that a live node's timeout failed (the machine too loaded for the
	// node timeout) is counted apart; every other attempt must succeed,
	// nearly always. The attempts go on for two seconds, and until a few
	// succeeded, within the cap.
	ok, tries, slow := 0, 0, 0
	var lat []time.Duration
	began := time.Now()
	for time.Since(began) < 2*time.Second || ok < len(one) && time.Since(began) < capped {
		for _, cl := range one {
			tries++
			start := time.Now()
			l, err := cl.Locker.TryLock(ctx, fmt.Sprintf("two-down-%d", tries), ttl)
			lat = append(lat, time.Since(start))
			if err != nil {
				t.Logf("%s: TryLock with 2 of 5 down: %v", cl.Name, err)
				if timedOut(err, 2) {
					slow++
				}
				continue
			}
			ok++
			_ = l.Unlock(ctx)
		}
	}
	rate := float64(ok) / float64(max(1, tries-slow))
	figure(t, "chaos: two_down_success=%.3f two_down_ok=%d two_down_tries=%d two_down_timed_out=%d two_down_trylock_p50=%v two_down_trylock_max=%v two_down_time=%v",
		rate, ok, tries, slow, quantile(lat, 0.5).Round(time.Microsecond), quantile(lat, 1).Round(time.Microsecond), time.Since(began).Round(time.Millisecond))
	if ok == 0 || rate < 0.9 {
		t.Errorf("with 2 of 5 nodes down, %d of %d attempts succeeded (%d failed by a live node's timeout) in %v (pace %v); want nearly all", ok, tries, slow, time.Since(began).Round(time.Millisecond), p)
	}

	c.Servers[2].Kill()
	killed := time.Now() // the last of the three
	threeDown := func(what string, ctxFor time.Duration) string {
		var tryMax, lockMax, retryMax time.Duration
		for _, cl := range one {
			m := cl.Locker.(ManagerLocker).M
			start := time.Now()
			_, err := m.TryLock(ctx, "three-down", dlm.WithTTL(ttl))
			tryMax = max(tryMax, time.Since(start))
			if !errors.Is(err, dlm.ErrUnavailable) {
				t.Errorf("%s, %s: TryLock = %v; want ErrUnavailable", what, cl.Name, err)
			}
			start = time.Now()
			_, err = m.Lock(ctx, "three-down", dlm.WithTTL(ttl), dlm.WithRetry(3, dlm.FixedBackoff(10*time.Millisecond)))
			retryMax = max(retryMax, time.Since(start))
			if !errors.Is(err, dlm.ErrUnavailable) {
				t.Errorf("%s, %s: Lock with 3 tries = %v; want ErrUnavailable", what, cl.Name, err)
			}
			cctx, cancel := context.WithTimeout(ctx, ctxFor)
			start = time.Now()
			_, err = m.Lock(cctx, "three-down", dlm.WithTTL(ttl))
			lockMax = max(lockMax, time.Since(start))
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s, %s: Lock until the context ends = %v; want it to wrap DeadlineExceeded", what, cl.Name, err)
			}
		}
		if tryMax > capped || retryMax > capped {
			t.Errorf("%s: TryLock took up to %v, Lock with 3 tries up to %v; want them to fail rather than wait (cap %v at pace %v)", what, tryMax, retryMax, capped, p)
		}
		if lockMax > ctxFor+capped {
			t.Errorf("%s: Lock returned up to %v after it began, its context ending after %v; want it to return once its context ends (cap %v at pace %v)", what, lockMax, ctxFor, capped, p)
		}
		return fmt.Sprintf("%[1]s_trylock=ErrUnavailable %[1]s_trylock_max=%[2]v %[1]s_lock3tries=ErrUnavailable %[1]s_lock3tries_max=%[3]v %[1]s_lock_ctx=%[4]v %[1]s_lock_returned_max=%[5]v",
			what, tryMax.Round(time.Microsecond), retryMax.Round(time.Microsecond), ctxFor, lockMax.Round(time.Millisecond))
	}
	ctxFor := cal.of(300 * time.Millisecond)
	killedLine := threeDown("three_down", ctxFor)
	// Delayed restart: the nodes rejoin empty only after the TTL.
	time.Sleep(time.Until(killed.Add(maxTTL(cal.keys(chaosKeys)) + restartMargin)))
	for _, i := range []int{2, 3, 4} {
		c.Servers[i].Restart()
	}
	// Three black-holed nodes: the attempts fail by the node timeout.
	var heals []func()
	for _, cl := range one {
		heals = append(heals, c.Net.Partition(cl.ID, 0, 1, 2))
	}
	holedLine := threeDown("three_holed", ctxFor)
	for _, heal := range heals {
		heal()
	}
	// Right after the heal, the black-holed connections are reset: each
	// client obtains a lock again, and how long that takes is a figure.
	healed := time.Now()
	var recover time.Duration
	for _, cl := range one {
		cctx, cancel := context.WithTimeout(ctx, capped)
		l, err := cl.Locker.Lock(cctx, fmt.Sprintf("after-heal-%d", cl.ID), ttl)
		cancel()
		if err != nil {
			t.Errorf("%s: Lock right after healing the partition, retried for %v (pace %v): %v", cl.Name, capped, p, err)
			continue
		}
		recover = max(recover, time.Since(healed))
		_ = l.Unlock(ctx)
	}
	figure(t, "chaos: %s %s heal_to_lock_max=%v", killedLine, holedLine, recover.Round(time.Millisecond))
}
