package dlm

import (
	"math"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, tc := range []struct {
		name string
		b    Backoff
		want map[int]time.Duration // by retry number n
	}{
		{"Fixed(10ms)", FixedBackoff(10 * ms), map[int]time.Duration{1: 10 * ms, 2: 10 * ms, 50: 10 * ms}},
		{"Fixed(0)", FixedBackoff(0), map[int]time.Duration{1: 0, 7: 0}},
		{"Linear(10ms, 35ms)", LinearBackoff(10*ms, 35*ms),
			map[int]time.Duration{0: 10 * ms, 1: 10 * ms, 2: 20 * ms, 3: 30 * ms, 4: 35 * ms, 1000: 35 * ms}},
		{"Linear(50ms, 20ms)", LinearBackoff(50*ms, 20*ms), map[int]time.Duration{1: 20 * ms, 2: 20 * ms}},
		{"Linear(1h, max)", LinearBackoff(time.Hour, math.MaxInt64),
			map[int]time.Duration{3: 3 * time.Hour, math.MaxInt32: math.MaxInt64}},
		{"Exponential(10ms, 200ms)", ExponentialBackoff(10*ms, 200*ms),
			map[int]time.Duration{1: 10 * ms, 2: 20 * ms, 3: 40 * ms, 4: 80 * ms, 5: 160 * ms, 6: 200 * ms, 1000: 200 * ms}},
		{"Exponential(300ms, 200ms)", ExponentialBackoff(300*ms, 200*ms), map[int]time.Duration{1: 200 * ms, 9: 200 * ms}},
		// A maximum near the largest Duration must not overflow into a
		// negative (that is, no) wait.
		{"Exponential(1s, max)", ExponentialBackoff(time.Second, math.MaxInt64),
			map[int]time.Duration{2: 2 * time.Second, 31: time.Second << 30, 40: math.MaxInt64, 1000: math.MaxInt64}},
		{"Exponential(1ns, max)", ExponentialBackoff(1, math.MaxInt64),
			map[int]time.Duration{63: 1 << 62, 64: math.MaxInt64, 200: math.MaxInt64}},
	} {
		for n, want := range tc.want {
			if got := tc.b(n); got != want {
				t.Errorf("%s(%d) = %v; want %v", tc.name, n, got, want)
			}
		}
	}
}

// TestJitter checks that waits are drawn from [d/2, d] and spread over it.
func TestJitter(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{-time.Second, 0, 1, 2, 3, time.Millisecond, time.Second, math.MaxInt64} {
		lo, hi := d/2, d
		if d <= 0 {
			lo, hi = 0, 0
		}
		minSeen, maxSeen := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
		for i := 0; i < 2000; i++ {
			got := jitter(d)
			if got < lo || got > hi {
				t.Fatalf("jitter(%v) = %v; want within [%v, %v]", d, got, lo, hi)
			}
			minSeen, maxSeen = min(minSeen, got), max(maxSeen, got)
		}
		// Over 2000 draws the extremes come close to the bounds: a jitter
		// stuck at one value or on one half would fail this.
		if d >= time.Millisecond && (minSeen > lo+(hi-lo)/10 || maxSeen < hi-(hi-lo)/10) {
			t.Errorf("jitter(%v) drew only from [%v, %v]; want the whole of [%v, %v]", d, minSeen, maxSeen, lo, hi)
		}
	}
}
