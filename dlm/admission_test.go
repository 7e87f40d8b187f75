package dlm

import (
	"math"
	"testing"
	"time"
)

// TestCostMeter checks the measure of a renewal's cost: busy time over
// the renewals of the current window and the one before, none older.
func TestCostMeter(t *testing.T) {
	t0 := time.Unix(0, 0)
	type sample struct {
		at   time.Duration
		busy time.Duration
		n    int
	}
	for _, tc := range []struct {
		name    string
		samples []sample
		want    float64
	}{
		{"none", nil, 0},
		{"one window", []sample{{0, 10 * time.Millisecond, 10}, {100 * time.Millisecond, 30 * time.Millisecond, 10}}, 0.002},
		{"two windows", []sample{{0, 10 * time.Millisecond, 10}, {meterWindow, 30 * time.Millisecond, 10}}, 0.002},
		{"older windows dropped", []sample{{0, 100 * time.Millisecond, 10}, {meterWindow, 10 * time.Millisecond, 10}, {2 * meterWindow, 10 * time.Millisecond, 10}}, 0.001},
		{"an idle gap drops both", []sample{{0, 100 * time.Millisecond, 10}, {5 * meterWindow, 10 * time.Millisecond, 10}}, 0.001},
		{"failed batches: busy, nothing renewed", []sample{{0, 10 * time.Millisecond, 10}, {time.Millisecond, 10 * time.Millisecond, 0}}, 0.002},
		{"every batch failed", []sample{{0, 10 * time.Millisecond, 0}}, math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c costMeter
			c.since = t0
			for _, s := range tc.samples {
				c.add(t0.Add(s.at), s.busy, s.n)
			}
			if got := c.cost(); got != tc.want && math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("cost = %v; want %v", got, tc.want)
			}
		})
	}
}
