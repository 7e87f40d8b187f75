package chaos

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// withMode returns gr with its mode set.
func withMode(m Mode, gr Grant) Grant {
	gr.Mode = m
	return gr
}

func TestCheckShared(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limit       int
		grants      []Grant
		kind        string // of the violations; "" for none
		count, most int
	}{
		{"readers overlap", 1, numbered(
			withMode(Shared, g("k", "a", 0, 10, 100, 50, 0)),
			withMode(Shared, g("k", "b", 0, 20, 100, 60, 0)),
			withMode(Exclusive, g("k", "w", 0, 60, 100, 90, 7))), "", 0, 2},
		{"writer with a reader", 1, numbered(
			withMode(Shared, g("k", "a", 0, 10, 100, 50, 0)),
			withMode(Exclusive, g("k", "w", 0, 40, 100, 90, 7))), WriterWithReaders, 1, 2},
		{"reader with a writer", 1, numbered(
			withMode(Exclusive, g("k", "w", 0, 10, 100, 50, 7)),
			withMode(Shared, g("k", "a", 0, 40, 100, 90, 0))), WriterWithReaders, 1, 2},
		{"two writers", 1, numbered(
			withMode(Exclusive, g("k", "w", 0, 10, 100, 50, 7)),
			withMode(Exclusive, g("k", "v", 0, 40, 100, 90, 8))), WriterWithReaders, 1, 2},
		{"a crashed reader's window ends at its validity", 1, numbered(
			withMode(Shared, g("k", "a", 0, 10, 30, -1, 0)),
			withMode(Exclusive, g("k", "w", 0, 30, 100, 90, 7))), "", 0, 1},
		{"permits within the limit", 2, numbered(
			withMode(Permit, g("s", "a", 0, 10, 100, 50, 0)),
			withMode(Permit, g("s", "b", 0, 20, 100, 60, 0)),
			withMode(Permit, g("s", "c", 0, 50, 100, 90, 0))), "", 0, 2},
		{"a permit over the limit", 2, numbered(
			withMode(Permit, g("s", "a", 0, 10, 100, 50, 0)),
			withMode(Permit, g("s", "b", 0, 20, 100, 60, 0)),
			withMode(Permit, g("s", "c", 0, 49, 100, 90, 0))), OverLimit, 1, 3},
		{"keys apart", 1, numbered(
			withMode(Permit, g("s", "a", 0, 10, 100, 50, 0)),
			withMode(Permit, g("t", "b", 0, 20, 100, 60, 0))), "", 0, 1},
	} {
		r := CheckShared(tc.grants, tc.limit)
		if len(r.Violations) != tc.count || r.MostShared != tc.most {
			t.Errorf("%s: CheckShared = %d violations %v, most %d; want %d, most %d", tc.name, len(r.Violations), r.Violations, r.MostShared, tc.count, tc.most)
			continue
		}
		for _, v := range r.Violations {
			if v.Kind != tc.kind {
				t.Errorf("%s: violation %v; want kind %s", tc.name, v, tc.kind)
			}
		}
	}
}

// sharedLimit is the chaos semaphore's limit: with five nodes each permit
// needs four of them.
const sharedLimit = 2

// sharedMinGrants is how many grants of each mode TestChaosShared's run
// must show, besides two readers and two permits held at once, before its
// checks mean anything.
const sharedMinGrants = 5

// splitShared returns the read-write locks' grants and the permits, and
// the count of grants by mode.
func splitShared(grants []Grant) (rw, sem []Grant, byMode map[string]int64) {
	byMode = map[string]int64{}
	for _, g := range grants {
		byMode[g.Mode.String()]++
		if g.Mode == Permit {
			sem = append(sem, g)
		} else {
			rw = append(rw, g)
		}
	}
	return rw, sem, byMode
}

// sharedCovered reports whether grants show what TestChaosShared needs:
// sharedMinGrants of each mode, and sharing (two readers of a read-write
// lock at once, two permits of a semaphore at once).
func sharedCovered(grants []Grant) bool {
	rw, sem, byMode := splitShared(grants)
	for _, m := range []Mode{Exclusive, Shared, Permit} {
		if byMode[m.String()] < sharedMinGrants {
			return false
		}
	}
	return CheckShared(rw, 1).MostShared >= 2 && CheckShared(sem, sharedLimit).MostShared >= 2
}

// TestChaosShared runs the real manager's read-write locks and semaphores,
// through all three backends, under every fault for at least -chaos.shared,
// and checks that no writer ever held a read-write lock with anyone else
// and that no more than the limit of permits were ever held at once. The
// run goes on until it has checked enough to mean something
// (sharedMinGrants grants of each mode, two readers and two permits at
// once), without faults at the end if they kept it short, and fails only
// when that never comes even without faults (runPhases). The node timeout,
// TTLs and waits are calibrated on the cluster's pace.
func TestChaosShared(t *testing.T) {
	snap := leakcheck.Take()
	r := rand.New(rand.NewPCG(pickSeed(t), 2))
	c, clients, cal := startChaos(t)
	for i, cl := range clients {
		clients[i] = &Client{ID: cl.ID, Backend: cl.Backend, Name: cl.Name,
			Locker: SharedLocker{M: cl.Locker.(ManagerLocker).M, ReadShare: 0.7, Limit: sharedLimit}}
	}
	keys := cal.keys([]KeySpec{{RWPrefix + "300", 300 * time.Millisecond}, {RWPrefix + "500", 500 * time.Millisecond},
		{SemPrefix + "300", 300 * time.Millisecond}, {SemPrefix + "800", 800 * time.Millisecond}})
	w := &Workload{
		Clients: clients, Keys: keys, History: NewHistory(), LockTimeout: cal.of(2 * time.Second),
		Hold: 0.5, Overrun: 0.05, Pause: 0.05, Crash: 0.03, Extend: 0.2, PauseBeyond: cal.of(100 * time.Millisecond),
		Seed: r.Uint64(),
	}
	in := &Injector{C: c, MaxTTL: maxTTL(keys), Kinds: faultKinds(t), MaxKilled: 1, Rand: rand.New(rand.NewPCG(r.Uint64(), 1)),
		Logf: func(f string, a ...any) { t.Logf("fault: "+f, a...) }}
	var stats Stats
	ph := runPhases(t, c, in, *sharedFor, false, func() bool { return sharedCovered(w.History.Grants()) },
		func(ctx context.Context) { stats = w.Run(ctx) })
	grants := w.History.Grants()
	rw, sem, byMode := splitShared(grants)
	start := time.Now()
	rwr, semr := CheckShared(rw, 1), CheckShared(sem, sharedLimit)
	took := time.Since(start)
	for _, v := range append(rwr.Violations, semr.Violations...) {
		t.Errorf("violation: %v", v)
	}
	fencing := Check(onlyExclusive(rw)) // writers' tokens grow; their windows never overlap
	for _, v := range fencing.Violations {
		t.Errorf("violation among writers: %v", v)
	}
	figure(t, "chaos: test=TestChaosShared nodes=%d clients=%d duration=%v grants=%d grants_by_mode=%s lock_calls=%d faults_total=%d faults=%s violations=%d most_readers=%d most_permits=%d limit=%d permit_quorum=%d check_time=%v lock_errors=%s node_timeout=%v ttl=%v..%v grants_per_s=%.1f %s %s",
		chaosNodes, chaosClients, ph.total().Round(time.Second), len(grants), FormatCounts(byMode), stats.Attempts,
		sum(in.Counts), FormatCounts(in.Counts), len(rwr.Violations)+len(semr.Violations)+len(fencing.Violations),
		rwr.MostShared, semr.MostShared, sharedLimit, dlm.SemaphoreQuorum(chaosNodes, sharedLimit), took.Round(time.Microsecond), FormatCounts(stats.Errors),
		cal.nodeTimeout, keys[0].TTL, maxTTL(keys), float64(len(grants))/ph.total().Seconds(), ph.figures(), cal.figures())
	if !ph.covered {
		for _, m := range []Mode{Exclusive, Shared, Permit} {
			if byMode[m.String()] < sharedMinGrants {
				t.Errorf("only %d %s grants in %v: the workload made too little progress even without faults", byMode[m.String()], m, ph)
			}
		}
		if rwr.MostShared < 2 || semr.MostShared < 2 {
			t.Errorf("at most %d readers and %d permits held at once in %v; want sharing exercised (2 or more)", rwr.MostShared, semr.MostShared, ph)
		}
		for class, msg := range stats.FirstErrors {
			t.Logf("first %s error: %s", class, msg)
		}
	}
	CloseClients(t, clients)
	if err := c.Net.Close(); err != nil {
		t.Errorf("closing proxies: %v", err)
	}
	snap.Check(t, 10*time.Second)
}

// onlyExclusive returns the writers' grants.
func onlyExclusive(gs []Grant) []Grant {
	var out []Grant
	for _, g := range gs {
		if g.Mode == Exclusive {
			out = append(out, g)
		}
	}
	return out
}
