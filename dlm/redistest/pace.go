package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/dlmgo/redlock/internal/resp"
)

// Pace is how slowly this machine answers at the moment it was measured:
// the slowest of a sample of round trips to a test's own redis-server, and
// the latest a short timer fired past its time. A test on real processes
// that must bound a wait takes the bound from a Pace measured on its run
// ([MeasurePace]), never from a constant tuned on a quiet machine: the same
// suite then holds on a machine several times slower or busier, and still
// fails where something is broken rather than slow.
type Pace struct {
	RTT  time.Duration // the slowest PING round trip of the sample
	Late time.Duration // the latest a 1 ms timer fired past its time
}

// Pace's sample: paceSamples round trips over one connection, and as many
// 1 ms timers. On a quiet 2-core machine under -race it takes about 10 ms.
const (
	paceSamples = 20
	paceTimer   = time.Millisecond
	// paceSlack is how many of the slowest step [Pace.Slack] allows. The
	// slowest of the sample is about the 95th percentile of a step (a round
	// trip, or a timer behind the scheduler) at the moment of measuring;
	// four of them leave room for a request that meets a stall worse than
	// any the sample saw, and for the load to grow during the test, without
	// turning one unlucky sample into minutes of waiting (a factor of 20
	// made one 300 ms stall into a 2-minute TTL).
	paceSlack = 4
)

// MeasurePace measures the machine through s, which must be up: paceSamples
// PINGs over one connection, one after the other, and as many 1 ms sleeps.
// It fails t when s does not answer.
func MeasurePace(t testing.TB, s *Server) Pace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
	defer cancel()
	c, err := resp.Dial(ctx, s.clientConfig())
	if err != nil {
		t.Fatalf("redistest: measuring the pace through %s: %v", s.Addr(), err)
	}
	defer c.Close()
	var p Pace
	for range paceSamples {
		start := time.Now()
		if _, err := c.Do(ctx, "PING"); err != nil {
			t.Fatalf("redistest: measuring the pace through %s: %v", s.Addr(), err)
		}
		p.RTT = max(p.RTT, time.Since(start))
		start = time.Now()
		time.Sleep(paceTimer)
		p.Late = max(p.Late, time.Since(start)-paceTimer)
	}
	return p
}

// Slack is the time to allow, beyond what a step takes on a quiet machine,
// for a request or a timer at this pace: paceSlack times the slower of the
// slowest round trip and the latest timer. A node timeout shorter than
// Slack would count healthy nodes as failed.
func (p Pace) Slack() time.Duration { return paceSlack * max(p.RTT, p.Late) }

// Stretch returns d, or [Pace.Slack] where that is more: a node timeout or a
// wait that is at least d and never shorter than this pace needs.
func (p Pace) Stretch(d time.Duration) time.Duration { return max(d, p.Slack()) }

// Max returns the slower of p and q, field by field: a bound taken before
// and after a step covers the load of both moments.
func (p Pace) Max(q Pace) Pace { return Pace{RTT: max(p.RTT, q.RTT), Late: max(p.Late, q.Late)} }

// String reports the pace for a test's log.
func (p Pace) String() string {
	return "rtt≤" + p.RTT.Round(10*time.Microsecond).String() + " timer+" + p.Late.Round(10*time.Microsecond).String()
}

// Widen runs check, whose bounds a test takes from the pace, with them
// scaled by 1, 2, 4, ... until its outcome is conclusive. check fails t
// for what is wrong whatever the machine's speed, and returns a reason when
// its outcome is inconclusive: something a slow machine could cause as well
// as a broken build (a call that ended as it should, but after its bound).
// An inconclusive outcome is logged and check run again with the scale
// doubled; the tries-th fails t, saying the machine was too slow to tell.
func Widen(t testing.TB, tries int, check func(scale time.Duration) (inconclusive string)) {
	t.Helper()
	for i := range tries {
		scale := time.Duration(1) << i
		why := check(scale)
		if why == "" || t.Failed() {
			return
		}
		t.Logf("inconclusive with bounds ×%d: %s; again with them doubled", scale, why)
	}
	t.Fatalf("inconclusive %d times over, bounds up to ×%d: the machine was too slow to tell", tries, 1<<(tries-1))
}
