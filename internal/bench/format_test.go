package bench

import (
	"math"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"rate", fmtRate(2431.4), "2,431"},
		{"rate millions", fmtRate(1234567), "1,234,567"},
		{"rate small", fmtRate(8.46), "8.5"},
		{"rate hundreds", fmtRate(999.6), "1,000"},
		{"rate NaN", fmtRate(math.NaN()), "—"},
		{"short hundreds", fmtShort(160.2), "160"},
		{"short thousands", fmtShort(2431), "2.4k"},
		{"short tens of thousands", fmtShort(53114), "53k"},
		{"short millions", fmtShort(1.25e6), "1.2M"},
		{"short round thousands", fmtShort(5000), "5k"},
		{"dur zero", fmtDur(0), "0"},
		{"dur µs", fmtDur(24627 * time.Nanosecond), "25 µs"},
		{"dur ms", fmtDur(1098274 * time.Nanosecond), "1.10 ms"},
		{"dur tens of ms", fmtDur(67912759 * time.Nanosecond), "67.9 ms"},
		{"dur hundreds of ms", fmtDur(886977871 * time.Nanosecond), "887 ms"},
		{"dur s", fmtDur(1640377493 * time.Nanosecond), "1.64 s"},
		{"dist", fmtDist(Dist{N: 3, P50: 200 * time.Microsecond, P99: 5 * time.Millisecond}), "200 µs / 5.00 ms"},
		{"dist empty", fmtDist(Dist{}), "—"},
		{"ratio small", fmtRatio(0.849), "0.85×"},
		{"ratio tens", fmtRatio(12.34), "12.3×"},
		{"ratio hundreds", fmtRatio(152.4), "152×"},
		{"ratio thousands", fmtRatio(12865.6), "12,866×"},
		{"ratio infinite", fmtRatio(math.Inf(1)), "∞"},
		{"ratio NaN", fmtRatio(math.NaN()), "—"},
		{"percent", fmtPercent(0.0271), "2.7 %"},
		{"percent tiny", fmtPercent(0.0045), "0.45 %"},
		{"fairness", fmtFairness(5.551, 0), "5.55"},
		{"fairness starved", fmtFairness(math.Inf(1), 3), "∞ (3 starved)"},
		{"fairness none", fmtFairness(math.NaN(), 0), "—"},
		{"work zero", fmtWork(0), "0 ms"},
		{"trim whole", trimFloat(4), "4"},
		{"trim decimal", trimFloat(1.5), "1.5"},
		{"trim rounds to whole", trimFloat(234.97), "235"},
		{"work", fmtWork(time.Millisecond), "1 ms"},
		{"work fraction", fmtWork(1500 * time.Microsecond), "1.50 ms"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
