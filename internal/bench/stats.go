package bench

import (
	"math"
	"slices"
	"time"
)

// Dist summarizes a sample of durations.
type Dist struct {
	N    int
	P50  time.Duration
	P99  time.Duration
	Max  time.Duration
	Mean time.Duration
}

// Summarize returns the distribution of samples, which it leaves unchanged.
// An empty sample gives the zero Dist.
func Summarize(samples []time.Duration) Dist {
	if len(samples) == 0 {
		return Dist{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Dist{
		N:    len(s),
		P50:  Percentile(s, 50),
		P99:  Percentile(s, 99),
		Max:  s[len(s)-1],
		Mean: sum / time.Duration(len(s)),
	}
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest sample that at least p percent of the
// samples do not exceed. It returns 0 for an empty sample.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Fairness returns the ratio of the largest to the smallest count: 1 when
// every client got as many grants, +Inf when some client got none while
// another got some, and NaN when there are no counts or no grants at all.
func Fairness(counts []int) float64 {
	if len(counts) == 0 {
		return math.NaN()
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	switch {
	case hi == 0:
		return math.NaN()
	case lo == 0:
		return math.Inf(1)
	}
	return float64(hi) / float64(lo)
}

// Starved returns how many counts are zero.
func Starved(counts []int) int {
	n := 0
	for _, c := range counts {
		if c == 0 {
			n++
		}
	}
	return n
}

// Ratio returns a/b, +Inf when only b is zero and NaN when both are.
func Ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return math.NaN()
		}
		return math.Inf(1)
	}
	return a / b
}

// Median returns the median of xs (the mean of the middle two when their
// number is even), NaN when there are none. It leaves xs unchanged.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Collapsed returns the indices of the runs whose rate is below half the
// median of all of them, or zero: the runs in which a lock collapsed,
// passing far fewer grants than it does in its other runs, or none.
func Collapsed(runs []float64) []int {
	half := Median(runs) / 2
	var out []int
	for i, x := range runs {
		if x < half || x == 0 {
			out = append(out, i)
		}
	}
	return out
}
