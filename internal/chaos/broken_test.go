package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// figure prints a line of figures to the test log and to stdout, where `go
// test -v` and CI logs show it. `go test ./...` without -v hides the output
// of a passing package, so the line is also appended to the file named by
// $CHAOS_FIGURES, when set, for a CI step to print.
func figure(t testing.TB, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	fmt.Println(line)
	if path := os.Getenv("CHAOS_FIGURES"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			_, err = fmt.Fprintln(f, line)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			t.Errorf("CHAOS_FIGURES: %v", err)
		}
	}
}

// A broken locker's run stops at its first violation, and a sound one's
// once it has run for its duration and shown enough to judge (minGrants,
// and shared grants overlapping): either way, a machine whose load slows
// the clients down gets up to loadFactor times the duration to show it.
const (
	loadFactor = 4
	minGrants  = 20
)

// runUntil runs w: with stopEarly, until the checker finds a violation;
// without, for d and until minGrants grants; at most loadFactor×d. It
// returns the stats and the exact checker's report, after cross-checking
// the verdict with porcupine.
func runUntil(t *testing.T, w *Workload, d time.Duration, stopEarly bool) (Stats, Report) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), loadFactor*d)
	defer cancel()
	done := make(chan Stats)
	go func() { done <- w.Run(ctx) }()
	var stats Stats
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case stats = <-done:
			break wait
		case <-tick.C:
			r := Check(w.History.Grants())
			if stopEarly && len(r.Violations) > 0 || !stopEarly && time.Since(start) >= d && r.Grants >= minGrants {
				cancel()
			}
		}
	}
	grants := w.History.Grants()
	rep := Check(grants)
	res, ops := CheckLinearizable(grants, 30*time.Second)
	if (res == porcupine.Illegal) != (len(rep.Violations) > 0) {
		t.Errorf("porcupine says %v over %d operations; the exact checker found %d violations", res, ops, len(rep.Violations))
	}
	return stats, rep
}

// brokenRuns bounds how many times TestCheckerFlagsBrokenLockers runs a
// locker whose run was inconclusive, widening its node timeout, TTLs and
// waits twice each time.
const brokenRuns = 3

// A run's verdict in TestCheckerFlagsBrokenLockers.
const (
	verdictFlagged      = "flagged"      // violations found
	verdictClean        = "clean"        // none, in a run that would have shown them
	verdictInconclusive = "inconclusive" // none, in a run too starved to tell
)

// brokenVerdict judges a run of a locker: with violations it is flagged;
// without, it is clean if it had at least minGrants grants and, for a
// broken locker, no Lock call ran out of time (a locker whose calls time out
// is starved by the machine's load, and may not have contended enough to
// show its flaw); otherwise it is inconclusive.
func brokenVerdict(broken bool, stats Stats, rep Report) string {
	switch {
	case len(rep.Violations) > 0:
		return verdictFlagged
	case rep.Grants < minGrants, broken && stats.Errors["timeout"] > 0:
		return verdictInconclusive
	}
	return verdictClean
}

// TestCheckerFlagsBrokenLockers proves that the suite can fail: the same
// contention, on the same five nodes, through the same proxies and backends,
// finds violations with each deliberately broken Redlock and none with the
// real manager or with a sound toy.
//
// Holders often act right up to Until (Overrun), which is where a missing
// drift allowance shows. The no-drift toy and its sound control run with a
// client clock 5% slow against the nodes' — the fault the drift allowance
// exists for (on one machine every clock runs at one rate, so the toy's
// clock is scaled); the sound control subtracts 6% and stays safe.
//
// The node timeouts, TTLs and waits are calibrated on the cluster's pace.
// A run that cannot tell a slow machine from a sound locker — a broken
// locker unflagged while some of its Lock calls timed out, or any locker
// with fewer than minGrants grants — is inconclusive: the locker runs
// again with its node timeout, TTLs and waits twice as wide, up to
// brokenRuns times. The test fails when a conclusive run leaves a broken
// locker unflagged, when any run of a sound one shows a violation, or when
// no run of a locker is conclusive.
func TestCheckerFlagsBrokenLockers(t *testing.T) {
	const clients = 6
	c := StartCluster(t, 5, clients)
	cal := calibrate(t, c, chaosNodeTimeout)
	keys := func(prefix string, widen float64) []KeySpec {
		return calibration{scale: widen}.keys([]KeySpec{{prefix + "-a", 300 * time.Millisecond}, {prefix + "-b", 400 * time.Millisecond}})
	}
	toy := func(configure func(*ToyLocker)) func(time.Duration) []*Client {
		return func(nodeTimeout time.Duration) []*Client {
			return c.ToyClients(func(l *ToyLocker) {
				l.NodeTimeout = nodeTimeout
				configure(l)
			})
		}
	}
	for _, tc := range []struct {
		name   string
		open   func(nodeTimeout time.Duration) []*Client
		broken bool
	}{
		{"toy " + NoNX.String(), toy(func(l *ToyLocker) { l.Flaw = NoNX }), true},
		{"toy " + QuorumOne.String(), toy(func(l *ToyLocker) { l.Flaw = QuorumOne }), true},
		{"toy " + NoDrift.String() + " clock 5% slow", toy(func(l *ToyLocker) { l.Flaw, l.ClockRate = NoDrift, 0.95 }), true},
		{"toy sound clock 5% slow drift 6%", toy(func(l *ToyLocker) { l.Flaw, l.ClockRate, l.DriftFactor = Sound, 0.95, 0.06 }), false},
		{"real manager", func(nodeTimeout time.Duration) []*Client {
			return c.ManagerClients(dlm.WithRetry(0, dlm.FixedBackoff(4*time.Millisecond)), dlm.WithNodeTimeout(nodeTimeout))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			widen := cal.scale
			for run := 1; ; run, widen = run+1, 2*widen {
				snap := leakcheck.Take()
				start := time.Now()
				wide := calibration{scale: widen}
				nodeTimeout := wide.of(chaosNodeTimeout)
				cl := tc.open(nodeTimeout)
				w := &Workload{
					Clients: cl, Keys: keys(fmt.Sprintf("broken-%d", time.Now().UnixNano()), widen), History: NewHistory(),
					LockTimeout: wide.of(2 * time.Second), Hold: 0.3, Overrun: 0.4, Seed: 7,
				}
				d := 4 * time.Second
				if tc.broken {
					d = 8 * time.Second
				}
				stats, rep := runUntil(t, w, d, tc.broken)
				CloseClients(t, cl)
				snap.Check(t, 5*time.Second)
				verdict := brokenVerdict(tc.broken, stats, rep)
				figure(t, "chaos-broken: locker=%q grants=%d ops=%d violations=%d elapsed=%v errors=%s run=%d node_timeout=%v ttl=%v..%v verdict=%s %s",
					tc.name, rep.Grants, rep.Ops, len(rep.Violations), time.Since(start).Round(time.Millisecond), FormatCounts(stats.Errors),
					run, nodeTimeout, w.Keys[0].TTL, w.Keys[len(w.Keys)-1].TTL, verdict, cal.figures())
				if len(rep.Violations) > 0 {
					t.Logf("first violation: %v", rep.Violations[0])
				}
				switch {
				case verdict == verdictFlagged && !tc.broken:
					t.Errorf("%d violations in %d grants; want none:\n%v", len(rep.Violations), rep.Grants, rep.Violations)
				case verdict == verdictClean && tc.broken:
					t.Errorf("the checker found no violation in %d grants of a broken locker, none of whose Lock calls timed out (node timeout %v)", rep.Grants, nodeTimeout)
				case verdict == verdictInconclusive && run < brokenRuns:
					t.Logf("run %d inconclusive: %d grants, %d Lock calls timed out; running again with node timeout, TTLs and waits ×2", run, rep.Grants, stats.Errors["timeout"])
					continue
				case verdict == verdictInconclusive:
					t.Errorf("no conclusive run in %d: the last had %d grants and %d Lock calls timed out at a node timeout of %v (pace %v); want %d grants and, for a broken locker, no timeout",
						run, rep.Grants, stats.Errors["timeout"], nodeTimeout, cal.pace, minGrants)
				}
				break
			}
		})
	}
}

// TestCheckerFlagsBrokenSharedLockers proves that CheckShared can fail end
// to end: the same contention on read-write locks and semaphores, on the
// same five nodes, through the same proxies and backends, finds violations
// of the expected kind with a read-write lock whose readers ignore the
// writer and with a semaphore whose permits need one node fewer than
// dlm.SemaphoreQuorum (three of five for a limit of 2: a majority, which
// is not enough), and none with the sound toy or the real manager.
//
// As in TestCheckerFlagsBrokenLockers, the node timeouts, TTLs and waits
// are calibrated on the cluster's pace, and a run too starved to tell —
// a broken locker unflagged while some Lock calls timed out, or a sound
// one with fewer than minGrants grants of either kind or no sharing — is
// inconclusive and runs again twice as wide, up to brokenRuns times.
func TestCheckerFlagsBrokenSharedLockers(t *testing.T) {
	const clients = 6
	c := StartCluster(t, 5, clients)
	cal := calibrate(t, c, chaosNodeTimeout)
	toy := func(f SharedFlaw) func(time.Duration) []*Client {
		return func(nodeTimeout time.Duration) []*Client {
			return c.ToySharedClients(func(l *ToySharedLocker) {
				l.Flaw, l.ReadShare, l.Limit, l.NodeTimeout = f, 0.3, sharedLimit, nodeTimeout
			})
		}
	}
	for _, tc := range []struct {
		name string
		open func(nodeTimeout time.Duration) []*Client
		want string // the kind of violation the flaw must show; "" for none
	}{
		{"toy " + ReadersIgnoreWriter.String(), toy(ReadersIgnoreWriter), WriterWithReaders},
		{"toy " + PermitQuorumShort.String(), toy(PermitQuorumShort), OverLimit},
		{"toy sound", toy(SharedSound), ""},
		{"real manager", func(nodeTimeout time.Duration) []*Client {
			cl := c.ManagerClients(dlm.WithRetry(0, dlm.FixedBackoff(4*time.Millisecond)), dlm.WithNodeTimeout(nodeTimeout))
			for _, x := range cl {
				x.Locker = SharedLocker{M: x.Locker.(ManagerLocker).M, ReadShare: 0.7, Limit: sharedLimit}
			}
			return cl
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			widen := cal.scale
			for run := 1; ; run, widen = run+1, 2*widen {
				snap := leakcheck.Take()
				start := time.Now()
				wide := calibration{scale: widen}
				nodeTimeout := wide.of(chaosNodeTimeout)
				cl := tc.open(nodeTimeout)
				prefix := fmt.Sprintf("broken-%d", time.Now().UnixNano())
				w := &Workload{
					Clients: cl, History: NewHistory(), LockTimeout: wide.of(2 * time.Second), Hold: 0.3, Overrun: 0.4, Seed: 7,
					Keys: wide.keys([]KeySpec{{RWPrefix + prefix, 300 * time.Millisecond}, {SemPrefix + prefix, 400 * time.Millisecond}}),
				}
				d := 3 * time.Second
				if tc.want != "" {
					d = 8 * time.Second
				}
				stats, rw, sem := runSharedUntil(t, w, d, tc.want != "")
				CloseClients(t, cl)
				snap.Check(t, 5*time.Second)
				byKind := map[string]int64{}
				for _, v := range append(rw.Violations, sem.Violations...) {
					byKind[v.Kind]++
				}
				starved := rw.Grants < minGrants || sem.Grants < minGrants || rw.MostShared < 2 || sem.MostShared < 2
				verdict := verdictClean
				switch {
				case len(byKind) > 0:
					verdict = verdictFlagged
				case starved, tc.want != "" && stats.Errors["timeout"] > 0:
					verdict = verdictInconclusive
				}
				figure(t, "chaos-broken-shared: locker=%q grants=%d violations=%s most_readers=%d most_permits=%d limit=%d elapsed=%v run=%d node_timeout=%v errors=%s verdict=%s %s",
					tc.name, rw.Grants+sem.Grants, FormatCounts(byKind), rw.MostShared, sem.MostShared, sharedLimit, time.Since(start).Round(time.Millisecond),
					run, nodeTimeout, FormatCounts(stats.Errors), verdict, cal.figures())
				for _, vs := range [][]SharedViolation{rw.Violations, sem.Violations} {
					if len(vs) > 0 {
						t.Logf("first violation: %v", vs[0])
					}
				}
				switch {
				case tc.want == "" && verdict == verdictFlagged:
					t.Errorf("violations %s; want none:\n%v\n%v", FormatCounts(byKind), rw.Violations, sem.Violations)
				case tc.want != "" && verdict == verdictFlagged && byKind[tc.want] == 0:
					t.Errorf("violations %s of a broken locker; want %s among them", FormatCounts(byKind), tc.want)
				case tc.want != "" && verdict == verdictClean:
					t.Errorf("the checker found no %s violation in %d grants of a broken locker, none of whose Lock calls timed out (node timeout %v)", tc.want, rw.Grants+sem.Grants, nodeTimeout)
				case verdict == verdictInconclusive && run < brokenRuns:
					t.Logf("run %d inconclusive: %d read-write grants (at most %d at once), %d permits (at most %d at once), %d Lock calls timed out; running again with node timeout, TTLs and waits ×2",
						run, rw.Grants, rw.MostShared, sem.Grants, sem.MostShared, stats.Errors["timeout"])
					continue
				case verdict == verdictInconclusive:
					t.Errorf("no conclusive run in %d: the last had %d read-write grants (at most %d at once), %d permits (at most %d at once) and %d Lock calls timed out at a node timeout of %v (pace %v)",
						run, rw.Grants, rw.MostShared, sem.Grants, sem.MostShared, stats.Errors["timeout"], nodeTimeout, cal.pace)
				}
				break
			}
		})
	}
}

// runSharedUntil runs w: with stopEarly, until CheckShared finds a
// violation; without, for d and until the read-write locks and the permits
// each have minGrants grants, some of them at once; at most loadFactor×d.
// It returns the workload's stats and CheckShared's reports of the
// read-write locks' grants (limit 1) and of the permits (sharedLimit).
func runSharedUntil(t *testing.T, w *Workload, d time.Duration, stopEarly bool) (stats Stats, rw, sem SharedReport) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), loadFactor*d)
	defer cancel()
	done := make(chan Stats)
	go func() { done <- w.Run(ctx) }()
	check := func() (SharedReport, SharedReport) {
		var rwg, semg []Grant
		for _, g := range w.History.Grants() {
			if g.Mode == Permit {
				semg = append(semg, g)
			} else {
				rwg = append(rwg, g)
			}
		}
		return CheckShared(rwg, 1), CheckShared(semg, sharedLimit)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case stats = <-done:
			rw, sem = check()
			return stats, rw, sem
		case <-tick.C:
			rw, sem := check()
			enough := time.Since(start) >= d && rw.Grants >= minGrants && sem.Grants >= minGrants && rw.MostShared >= 2 && sem.MostShared >= 2
			if stopEarly && len(rw.Violations)+len(sem.Violations) > 0 || !stopEarly && enough {
				cancel()
			}
		}
	}
}
