package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// missing stands for a number that was not measured or has no meaning.
const missing = "—"

// fmtRate formats a rate or count with thousands separators: "2,431",
// "8.5" below ten.
func fmtRate(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return missing
	case v < 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return groupThousands(int64(math.Round(v)))
}

// groupThousands writes n with a comma every three digits.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtShort formats a rate compactly for a chart label: "160", "2.4k",
// "53k", "1.2M".
func fmtShort(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return missing
	case v < 1000:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case v < 10_000:
		return strings.TrimSuffix(strconv.FormatFloat(v/1000, 'f', 1, 64), ".0") + "k"
	case v < 1_000_000:
		return strconv.FormatFloat(math.Round(v/1000), 'f', 0, 64) + "k"
	}
	return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
}

// fmtDur formats a latency with about three significant digits: "24 µs",
// "1.10 ms", "67.9 ms", "887 ms", "1.64 s".
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", (d+500*time.Nanosecond)/time.Microsecond)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", ms(d))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", ms(d))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", ms(d))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fmtDist formats the p50 and p99 of a distribution, or missing when it has
// no samples.
func fmtDist(d Dist) string {
	if d.N == 0 {
		return missing
	}
	return fmtDur(d.P50) + " / " + fmtDur(d.P99)
}

// fmtRatio formats a ratio as a multiplier: "0.85×", "12.3×", "152×",
// "12,866×", or "∞" when the divisor was zero.
func fmtRatio(x float64) string {
	switch {
	case math.IsNaN(x):
		return missing
	case math.IsInf(x, 1):
		return "∞"
	case x < 10:
		return strconv.FormatFloat(x, 'f', 2, 64) + "×"
	case x < 100:
		return strconv.FormatFloat(x, 'f', 1, 64) + "×"
	}
	return groupThousands(int64(math.Round(x))) + "×"
}

// fmtPercent formats a share as a percentage: "2.7 %", "0.45 %".
func fmtPercent(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return missing
	case x < 0.01:
		return strconv.FormatFloat(100*x, 'f', 2, 64) + " %"
	}
	return strconv.FormatFloat(100*x, 'f', 1, 64) + " %"
}

// fmtFairness formats a max/min ratio of grants, naming the starved
// clients when some got none.
func fmtFairness(x float64, starved int) string {
	switch {
	case math.IsNaN(x):
		return missing
	case math.IsInf(x, 1):
		return fmt.Sprintf("∞ (%d starved)", starved)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// fmtWork names a hot-key case's time held per grant: "0 ms", "1 ms".
func fmtWork(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%d ms", d/time.Millisecond)
	}
	return fmtDur(d)
}
