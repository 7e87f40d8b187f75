package redistest

import (
	"slices"
	"testing"
	"time"
)

// TestMeasurePace checks that a pace is measured through a running server
// and that its bounds follow it: Slack grows with the slowest sample, and
// Stretch never shortens a wait.
func TestMeasurePace(t *testing.T) {
	s := StartServer(t)
	p := MeasurePace(t, s)
	if p.RTT <= 0 {
		t.Fatalf("MeasurePace(...).RTT = %v; want a round trip measured", p.RTT)
	}
	t.Logf("pace %v, slack %v", p, p.Slack())
	for _, tc := range []struct {
		p     Pace
		d     time.Duration
		slack time.Duration
		want  time.Duration
	}{
		{Pace{RTT: time.Millisecond}, time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond},
		{Pace{RTT: time.Millisecond, Late: 3 * time.Millisecond}, time.Second, 12 * time.Millisecond, time.Second},
		{Pace{}, 0, 0, 0},
	} {
		if got := tc.p.Slack(); got != tc.slack {
			t.Errorf("%+v.Slack() = %v; want %v", tc.p, got, tc.slack)
		}
		if got := tc.p.Stretch(tc.d); got != tc.want {
			t.Errorf("%+v.Stretch(%v) = %v; want %v", tc.p, tc.d, got, tc.want)
		}
	}
	if got, want := (Pace{RTT: 2, Late: 1}).Max(Pace{RTT: 1, Late: 3}), (Pace{RTT: 2, Late: 3}); got != want {
		t.Errorf("Max = %+v; want %+v", got, want)
	}
}

// TestWiden checks that an inconclusive check runs again with its scale
// doubled, and that a conclusive one ends the runs.
func TestWiden(t *testing.T) {
	var scales []time.Duration
	Widen(t, 3, func(scale time.Duration) string {
		scales = append(scales, scale)
		if scale < 4 {
			return "too slow to tell"
		}
		return ""
	})
	if want := []time.Duration{1, 2, 4}; !slices.Equal(scales, want) {
		t.Errorf("Widen ran check at scales %v; want %v", scales, want)
	}
}
