package round

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

const ms = time.Millisecond

// rfc6298 is RFC 6298's estimator in exact arithmetic, the reference the
// RTO's microseconds are checked against: srtt, rttvar and rto in
// seconds, floor as its G, no backoff.
type rfc6298 struct {
	srtt, rttvar float64
	measured     bool
}

func (e *rfc6298) sample(r time.Duration) {
	x := r.Seconds()
	if !e.measured {
		e.srtt, e.rttvar, e.measured = x, x/2, true
		return
	}
	e.rttvar = (1-0.25)*e.rttvar + 0.25*math.Abs(e.srtt-x)
	e.srtt = (1-0.125)*e.srtt + 0.125*x
}

func (e *rfc6298) rto(floor, limit time.Duration) time.Duration {
	if !e.measured {
		return floor
	}
	rto := time.Duration((e.srtt + max(floor.Seconds(), 4*e.rttvar)) * float64(time.Second))
	return min(max(rto, floor), limit)
}

// TestRTOSamples checks the timeout learned from a series of round trips
// against RFC 6298's formulas (alpha 1/8, beta 1/4, K 4, the floor as G),
// bounded by the floor and the cap.
func TestRTOSamples(t *testing.T) {
	for _, tc := range []struct {
		name         string
		samples      []time.Duration
		floor, limit time.Duration
		want         time.Duration // exact; 0: RFC 6298's, within a µs per sample
	}{
		{"none: the cap", nil, 250 * ms, time.Second, time.Second},
		{"first: SRTT R, RTTVAR R/2, RTO 3R", []time.Duration{100 * ms}, 10 * ms, 10 * time.Second, 300 * ms},
		// RTTVAR 3/4·50 + 1/4·|100-200| = 62.5, SRTT 7/8·100 + 1/8·200 = 112.5.
		{"second", []time.Duration{100 * ms, 200 * ms}, 10 * ms, 10 * time.Second, 362500 * time.Microsecond},
		// RTTVAR 3/4·62.5 + 1/4·87.5 = 68.75, SRTT 7/8·112.5 + 1/8·200 = 123.4375.
		{"third", []time.Duration{100 * ms, 200 * ms, 200 * ms}, 10 * ms, 10 * time.Second, 0},
		{"steady: SRTT plus the floor", repeat(50*ms, 200), 10 * ms, 10 * time.Second, 60 * ms},
		{"quiet node: the floor above its round trip", []time.Duration{time.Millisecond}, 250 * ms, time.Second, 251 * ms},
		{"instant replies: the floor", repeat(0, 5), 250 * ms, time.Second, 250 * ms},
		{"slow node: capped", []time.Duration{5 * time.Second}, 250 * ms, time.Second, time.Second},
		{"fixed: cap not above the floor", []time.Duration{5 * time.Second}, 250 * ms, 250 * ms, 250 * ms},
		{"fixed: no cap", []time.Duration{5 * time.Second}, 250 * ms, 0, 250 * ms},
		{"falling", []time.Duration{800 * ms, 400 * ms, 200 * ms, 100 * ms, 50 * ms, 25 * ms}, 20 * ms, 10 * time.Second, 0},
		{"rising", []time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, 128 * ms, 256 * ms}, 20 * ms, 10 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r RTO
			var ref rfc6298
			for _, s := range tc.samples {
				r.Sample(s)
				ref.sample(s)
			}
			// SRTT: RFC 6298's, within a µs per sample; 0 before any.
			wantSRTT := time.Duration(ref.srtt * float64(time.Second))
			if srtt, tol := r.SRTT(), time.Duration(len(tc.samples)+1)*time.Microsecond; srtt < wantSRTT-tol || srtt > wantSRTT+tol {
				t.Errorf("SRTT after samples %v = %v; want %v (±%v)", tc.samples, srtt, wantSRTT, tol)
			}
			got := r.Timeout(tc.floor, tc.limit)
			want, tol := tc.want, time.Duration(0)
			if want == 0 {
				want, tol = ref.rto(tc.floor, tc.limit), time.Duration(len(tc.samples))*time.Microsecond
			}
			if got < want-tol || got > want+tol {
				t.Errorf("Timeout(%v, %v) after samples %v = %v; want %v (±%v)", tc.floor, tc.limit, tc.samples, got, want, tol)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// TestRTOBackoff checks that a node's timeout is the cap until it has
// answered; that a request that waited the whole timeout in vain doubles
// it, up to the cap; that requests sent under a shorter timeout than the
// current one double it no further; and that the next reply sets it from
// the round trips again (Karn).
func TestRTOBackoff(t *testing.T) {
	const floor, limit = 250 * ms, time.Second
	var r RTO
	for _, step := range []struct {
		what string
		do   func()
		want time.Duration
	}{
		{"no sample", func() {}, limit},
		{"a timeout before any sample", func() { r.Expired(limit, floor, limit) }, limit},
		{"an instant reply", func() { r.Sample(0) }, 250 * ms},
		{"a timeout", func() { r.Expired(250*ms, floor, limit) }, 500 * ms},
		{"another request sent under 250ms", func() { r.Expired(250*ms, floor, limit) }, 500 * ms},
		{"a request cut short", func() { r.Expired(100*ms, floor, limit) }, 500 * ms},
		{"a timeout at 500ms", func() { r.Expired(500*ms, floor, limit) }, time.Second},
		{"a timeout at the cap", func() { r.Expired(time.Second, floor, limit) }, time.Second},
		{"many more at the cap", func() {
			for range 100 {
				r.Expired(time.Hour, floor, limit)
			}
		}, time.Second},
		{"another node", func() { r.state.Store(0) }, limit},
		// SRTT 400, RTTVAR 200: 400 + max(250, 800), capped.
		{"a reply in 400ms", func() { r.Sample(400 * ms) }, time.Second},
		// RTTVAR 3/4·200 + 1/4·0 = 150, SRTT 400: 400 + 600.
		{"another", func() { r.Sample(400 * ms) }, time.Second},
		// RTTVAR 112.5: 400 + 450.
		{"a third", func() { r.Sample(400 * ms) }, 850 * ms},
		{"a timeout after them", func() { r.Expired(850*ms, floor, limit) }, time.Second},
		{"a reply: the backoff dropped", func() { r.Sample(400 * ms) }, 400*ms + 4*84375*time.Microsecond},
	} {
		step.do()
		if got := r.Timeout(floor, limit); got != step.want {
			t.Errorf("after %s: Timeout = %v; want %v", step.what, got, step.want)
		}
	}
	var fixed RTO
	fixed.Sample(0)
	fixed.Expired(time.Hour, floor, floor)
	if got := fixed.Timeout(floor, limit); got != floor {
		t.Errorf("after a timeout of a fixed timeout: Timeout = %v; want the floor %v (no backoff)", got, floor)
	}
}

// TestRTOBounds checks that whatever the node does, replies of any length
// and timeouts of any wait, in any order, the timeout stays within the
// floor and the cap of each request.
func TestRTOBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bounds := [][2]time.Duration{{20 * ms, 20 * ms}, {20 * ms, 80 * ms}, {100 * ms, 200 * ms}, {250 * ms, time.Second}}
	var r RTO
	for i := range 100000 {
		b := bounds[rng.IntN(len(bounds))]
		switch rng.IntN(3) {
		case 0:
			r.Sample(time.Duration(rng.Int64N(int64(time.Hour))))
		case 1:
			r.Sample(time.Duration(rng.Int64N(int64(2 * time.Second))))
		default:
			r.Expired(time.Duration(rng.Int64N(int64(4*time.Second))), b[0], b[1])
		}
		for _, c := range bounds {
			if got := r.Timeout(c[0], c[1]); got < c[0] || got > max(c[0], c[1]) {
				t.Fatalf("step %d: Timeout(%v, %v) = %v; want within them", i, c[0], c[1], got)
			}
		}
	}
}

// TestRTOConcurrent checks that the requests to one node may teach its
// timeout at once (run with -race), and that it stays within its bounds.
func TestRTOConcurrent(t *testing.T) {
	const floor, limit = 250 * ms, time.Second
	var r RTO
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				if (g+i)%3 == 0 {
					r.Expired(time.Duration(i)*ms, floor, limit)
				} else {
					r.Sample(time.Duration(i%700) * ms)
				}
				if got := r.Timeout(floor, limit); got < floor || got > limit {
					t.Errorf("Timeout = %v; want within [%v, %v]", got, floor, limit)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestRTONoAlloc checks that learning a node's timeout allocates nothing:
// every node request does it.
func TestRTONoAlloc(t *testing.T) {
	var r RTO
	if n := testing.AllocsPerRun(100, func() {
		r.Sample(3 * ms)
		r.Expired(time.Second, 250*ms, time.Second)
		_ = r.Timeout(250*ms, time.Second)
	}); n != 0 {
		t.Errorf("Sample, Expired, Timeout: %v allocations; want 0", n)
	}
}

// BenchmarkRTO is what a node request adds: a timeout read when the
// round sets its deadline, a sample when the reply comes, from many
// goroutines on one node.
func BenchmarkRTO(b *testing.B) {
	var r RTO
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = r.Timeout(250*ms, time.Second)
			r.Sample(200 * time.Microsecond)
		}
	})
}
