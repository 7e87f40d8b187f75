package goredis

import (
	"math"
	"testing"
)

func TestFormatFloat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{3.5, "3.5"},
		{100, "100"},
		{0.1, "0.10000000000000001"},
		{1e21, "1e+21"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	} {
		if got := formatFloat(tc.f); got != tc.want {
			t.Errorf("formatFloat(%v) = %q; want %q", tc.f, got, tc.want)
		}
	}
}
