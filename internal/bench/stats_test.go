package bench

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample", ms(7), 50, 7 * time.Millisecond},
		{"one sample p99", ms(7), 99, 7 * time.Millisecond},
		{"median of odd", ms(1, 2, 3), 50, 2 * time.Millisecond},
		{"median of even is the lower", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		{"p50 of 100", hundred, 50, 50 * time.Millisecond},
		{"p100 is the max", hundred, 100, 100 * time.Millisecond},
		{"p99 of 10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"tiny p is the min", ms(1, 2, 3), 0.1, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	in := []time.Duration{5, 1, 4, 2, 3}
	got := Summarize(in)
	want := Dist{N: 5, P50: 3, P99: 5, Max: 5, Mean: 3}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if in[0] != 5 {
		t.Errorf("Summarize sorted its argument in place: %v", in)
	}
	if got := Summarize(nil); got != (Dist{}) {
		t.Errorf("Summarize(nil) = %+v, want the zero Dist", got)
	}
}

func TestFairness(t *testing.T) {
	tests := []struct {
		name    string
		counts  []int
		want    float64
		starved int
	}{
		{"equal", []int{10, 10, 10}, 1, 0},
		{"four times", []int{40, 10, 20}, 4, 0},
		{"one starved", []int{5, 0, 3}, math.Inf(1), 1},
		{"no grants", []int{0, 0}, math.NaN(), 2},
		{"no clients", nil, math.NaN(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fairness(tt.counts)
			if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("Fairness(%v) = %v, want %v", tt.counts, got, tt.want)
			}
			if s := Starved(tt.counts); s != tt.starved {
				t.Errorf("Starved(%v) = %d, want %d", tt.counts, s, tt.starved)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		a, b, want float64
	}{
		{6, 3, 2},
		{1, 0, math.Inf(1)},
		{0, 5, 0},
		{0, 0, math.NaN()},
	}
	for _, tt := range tests {
		got := Ratio(tt.a, tt.b)
		if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("Ratio(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{0, 0}, 0},
	}
	for _, tt := range tests {
		if got := Median(tt.xs); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
	xs := []float64{3, 1, 2}
	Median(xs)
	if xs[0] != 3 || xs[1] != 1 {
		t.Errorf("Median reordered its argument: %v", xs)
	}
}

func TestCollapsed(t *testing.T) {
	tests := []struct {
		name string
		runs []float64
		want []int
	}{
		{"steady", []float64{400, 380, 420, 410, 395}, nil},
		{"one run at half the median is not below it", []float64{400, 200, 400, 400, 400}, nil},
		{"one run below half the median", []float64{400, 199, 400, 410, 390}, []int{1}},
		{"two of five collapsed, as the issue measured", []float64{320, 16, 300, 0, 310}, []int{1, 3}},
		{"every run without a grant", []float64{0, 0, 0}, []int{0, 1, 2}},
		{"one run", []float64{50}, nil},
		{"one run without a grant", []float64{0}, []int{0}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		if got := Collapsed(tt.runs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Collapsed(%v) = %v, want %v", tt.name, tt.runs, got, tt.want)
		}
	}
}
