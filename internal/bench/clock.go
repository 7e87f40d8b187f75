package bench

import (
	"math"
	"time"
)

// sharedClock maps readings of the clock that every process of the machine
// reads alike (sharedNow) to this process's time.Time, whose monotonic
// reading the contenders time their calls with. The contender processes of
// a run are told the run's start as a reading of the shared clock, and each
// times its calls from its own local instant of that reading, so the merged
// records of every process are on one time line.
//
// On Linux the shared clock is CLOCK_MONOTONIC, which is system-wide, and
// Go's monotonic clock is the same CLOCK_MONOTONIC read through the vDSO,
// so the mapping does not drift: two processes' instants of one reading
// differ by their mappings' errors only, each at most half the gap between
// the two local readings that bracket its shared one (typically well under
// a microsecond; the report shows the largest).
type sharedClock struct {
	base   time.Time     // a local instant
	shared time.Duration // the shared clock's reading at base
	err    time.Duration // how far base may be off: half the bracket
}

// clockTries is the number of bracketed readings newSharedClock takes, to
// keep the tightest: a process preempted between two readings widens one
// bracket, not all of them.
const clockTries = 16

// newSharedClock maps the shared clock to this process's clock.
func newSharedClock() (sharedClock, error) {
	best := sharedClock{err: math.MaxInt64}
	for range clockTries {
		t0 := time.Now()
		s, err := sharedNow()
		t1 := time.Now()
		if err != nil {
			return sharedClock{}, err
		}
		if half := t1.Sub(t0) / 2; half < best.err {
			best = sharedClock{base: t0.Add(half), shared: s, err: half}
		}
	}
	return best, nil
}

// local returns this process's instant of the shared clock's reading s.
func (c sharedClock) local(s time.Duration) time.Time { return c.base.Add(s - c.shared) }
