package chaos

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// The chaos tests prove safety (no two holders, tokens increasing, the
// histories linearizable) on real processes, however busy the machine: the
// liveness they see on the way (grants per second, regain times) are
// figures, not claims. Two things keep the claims meaningful on a slow
// machine:
//
//   - A calibration: the node timeouts of the clients are the values tuned
//     on a quiet machine, stretched to the pace of the cluster's own
//     servers measured on the run ([redistest.MeasurePace]); the TTLs and
//     waits grow in proportion, so that every TTL keeps its ratio to the
//     node timeout (a TTL must outlive a node request).
//   - Coverage rather than a fixed time: the workload runs under faults for
//     at least the test's duration and until it has covered what the checks
//     need (grants of each kind, sharing), at most faultCapFactor times the
//     duration; if the faults left the coverage short, they are lifted and
//     the workload goes on without them until it is covered. Only a
//     workload that covers nothing even without faults, within a cap taken
//     from the pace measured then ([calmCap]), fails for want of progress:
//     that is the claim of eventual progress.

// maxScale bounds how far a calibration widens the node timeouts and TTLs:
// wider, the keys of the longest TTL would outlive much of the fault phase,
// and the coverage, not the width, has to make up for the rest.
const maxScale = 8

// calibration is what a chaos test takes from the pace of its cluster.
type calibration struct {
	pace        redistest.Pace
	floor       time.Duration // the node timeout tuned on a quiet machine
	nodeTimeout time.Duration // floor, stretched to the pace
	scale       float64       // nodeTimeout/floor: what TTLs and waits are multiplied by
}

// clusterPace measures the pace through every server of c, which must all
// be up, and returns the slowest.
func clusterPace(t testing.TB, c *Cluster) redistest.Pace {
	t.Helper()
	var p redistest.Pace
	for _, s := range c.Servers {
		p = p.Max(redistest.MeasurePace(t, s))
	}
	return p
}

// tryClusterPace is clusterPace for a moment when the servers may be too
// busy to answer within MeasurePace's time (the workload still runs): it
// returns the error instead of failing t.
func tryClusterPace(t testing.TB, c *Cluster) (redistest.Pace, error) {
	t.Helper()
	st := &softTB{TB: t}
	var p redistest.Pace
	done := make(chan struct{})
	go func() {
		defer close(done)
		p = clusterPace(st, c)
	}()
	<-done
	if st.failed != "" {
		return p, errors.New(st.failed)
	}
	return p, nil
}

// softTB is a testing.TB whose Fatalf records the failure and ends only
// the goroutine that calls it, for a measurement that may fail without
// failing the test. Only Helper and Fatalf may be called on it.
type softTB struct {
	testing.TB
	failed string
}

func (s *softTB) Helper() {}

func (s *softTB) Fatalf(format string, args ...any) {
	s.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// calibrate measures c's pace and stretches the node timeout floor to it.
func calibrate(t testing.TB, c *Cluster, floor time.Duration) calibration {
	t.Helper()
	p := clusterPace(t, c)
	nt := min(p.Stretch(floor), maxScale*floor).Round(time.Millisecond)
	cal := calibration{pace: p, floor: floor, nodeTimeout: nt, scale: float64(nt) / float64(floor)}
	t.Logf("pace of the cluster's servers %v: node timeout %v (floor %v), TTLs and waits ×%.2f", p, nt, floor, cal.scale)
	return cal
}

// of returns d scaled by the calibration, to the millisecond.
func (c calibration) of(d time.Duration) time.Duration {
	return time.Duration(c.scale * float64(d)).Round(time.Millisecond)
}

// keys returns keys with their TTLs scaled by the calibration.
func (c calibration) keys(keys []KeySpec) []KeySpec {
	out := make([]KeySpec, len(keys))
	for i, k := range keys {
		out[i] = KeySpec{k.Name, c.of(k.TTL)}
	}
	return out
}

// figures renders the calibration for a figures line.
func (c calibration) figures() string {
	return fmt.Sprintf("pace_rtt=%v pace_timer=%v scale=%.2f", c.pace.RTT.Round(10*time.Microsecond), c.pace.Late.Round(10*time.Microsecond), c.scale)
}

// faultCapFactor bounds the fault phase: at most this many times the
// test's duration, however short of its coverage.
const faultCapFactor = 2

// calmCap is how long a workload may take, without faults, to cover what
// a test needs, at pace p: calmPaces times the pace's slack (which is
// itself twenty of the slowest steps measured), at least calmMin, at most
// calmMax, which keeps the package inside go test's default timeout. A
// workload that covers nothing in that time progresses at no pace.
func calmCap(p redistest.Pace) time.Duration {
	return min(max(calmMin, calmPaces*p.Slack()), calmMax)
}

const (
	calmPaces = 1000
	calmMin   = 30 * time.Second
	calmMax   = 3 * time.Minute
)

// phases is how the workload of a chaos test ran.
type phases struct {
	faults, calm time.Duration // how long each phase ran
	// coveredUnderFaults: the faults' phase covered what the test needs;
	// covered: either phase did.
	coveredUnderFaults, covered bool
	calmPace                    redistest.Pace // measured as the calm phase began
	calmCap                     time.Duration
}

// total is how long the workload ran.
func (p phases) total() time.Duration { return p.faults + p.calm }

// coveredIn names the phase that reached the coverage.
func (p phases) coveredIn() string {
	switch {
	case p.coveredUnderFaults:
		return "faults"
	case p.covered:
		return "calm"
	}
	return "never"
}

// figures renders the phases for a figures line.
func (p phases) figures() string {
	return fmt.Sprintf("fault_phase=%v calm_phase=%v covered_in=%s", p.faults.Round(100*time.Millisecond), p.calm.Round(100*time.Millisecond), p.coveredIn())
}

// String describes the phases for a test's failure message.
func (p phases) String() string {
	if p.coveredUnderFaults {
		return fmt.Sprintf("%v under faults", p.faults.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v under faults and %v without (cap %v at pace %v)", p.faults.Round(time.Millisecond), p.calm.Round(time.Millisecond), p.calmCap, p.calmPace)
}

// runPhases runs work, which returns once its context ends, while in
// applies faults to c: for at least d and until covered reports true (nil:
// at once) and, with allKinds, every kind of in was applied; at most
// faultCapFactor×d. If covered is still false then, the
// faults are healed (in.Run restarts the killed nodes) and work goes on
// without them until covered, at most [calmCap] at the pace measured then.
// covered must be safe to call while work runs.
func runPhases(t *testing.T, c *Cluster, in *Injector, d time.Duration, allKinds bool, covered func() bool, work func(ctx context.Context)) phases {
	t.Helper()
	if covered == nil {
		covered = func() bool { return true }
	}
	wctx, stopWork := context.WithCancel(context.Background())
	worked := make(chan struct{})
	go func() {
		defer close(worked)
		work(wctx)
	}()
	defer func() { // also when a server's method ends the test
		stopWork()
		<-worked
	}()
	start := time.Now()
	fctx, stopFaults := context.WithTimeout(context.Background(), faultCapFactor*d)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if poll(fctx, func() bool { return time.Since(start) >= d && covered() && (!allKinds || len(in.Missing()) == 0) }) {
			stopFaults()
		}
	}()
	defer func() {
		stopFaults()
		<-watched
	}()
	in.Run(t, fctx) // on this goroutine: the servers' methods fail the test
	stopFaults()
	var p phases
	p.faults = time.Since(start)
	p.coveredUnderFaults = covered()
	p.covered = p.coveredUnderFaults
	if !p.covered {
		// Every node is up again, but the workload still runs: a server
		// too busy to be measured gets the largest cap.
		var err error
		if p.calmPace, err = tryClusterPace(t, c); err != nil {
			p.calmCap = calmMax
			t.Logf("coverage short after %v under faults; the pace could not be measured (%v): the faults are lifted for at most %v", p.faults.Round(time.Millisecond), err, p.calmCap)
		} else {
			p.calmCap = calmCap(p.calmPace)
			t.Logf("coverage short after %v under faults: the faults are lifted for at most %v (pace %v)", p.faults.Round(time.Millisecond), p.calmCap, p.calmPace)
		}
		calmStart := time.Now()
		cctx, cancel := context.WithTimeout(context.Background(), p.calmCap)
		p.covered = poll(cctx, covered)
		cancel()
		p.calm = time.Since(calmStart)
	}
	return p
}

// poll calls cond every pollEvery until it reports true (poll returns
// true) or ctx ends (false).
func poll(ctx context.Context, cond func() bool) bool {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
}

const pollEvery = 100 * time.Millisecond
