package bench

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// burstRuns makes runs of 256 processes over 10 s: grants, stall, served,
// overlaps and connections per process on the busiest node, one per run.
func burstRuns(grants []int, stall []time.Duration, served, overlaps []int, conns []int64) []BurstRun {
	runs := make([]BurstRun, len(grants))
	for i := range runs {
		runs[i] = BurstRun{Window: 10 * time.Second, Processes: 256, Grants: grants[i], Stall: stall[i], Served: served[i],
			Violations: overlaps[i], Accepted: []int64{conns[i] * 256, 256}}
	}
	return runs
}

func repeat[T any](x T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// withBursts adds cold-burst cases to a run: at 256 processes redsync
// passes 1,000 grants/s a run with 3 s stalls; goredis passes every target
// over 5 runs; redigo misses each in one run; rueidis ran 2 runs, all
// within the targets; valkey did not run. At 64 processes goredis stalls
// once.
func withBursts(r *Results) {
	const s = time.Second
	ok := burstRuns(repeat(12000, 5), repeat(s, 5), repeat(250, 5), repeat(0, 5), repeat[int64](2, 5))
	r.Burst = append(r.Burst,
		BurstResult{Lib: "redsync", Processes: 256, Runs: burstRuns(repeat(10000, 5), repeat(3*s, 5), repeat(200, 5), repeat(0, 5), repeat[int64](1, 5))},
		BurstResult{Lib: "goredis", Processes: 256, Runs: ok},
		BurstResult{Lib: "redigo", Processes: 256, Runs: burstRuns(
			[]int{12000, 12000, 12000, 9000, 12000}, []time.Duration{s, s, 2 * s, s, s}, []int{250, 200, 250, 250, 250},
			[]int{0, 0, 0, 0, 1}, []int64{2, 2, 2, 5, 2})},
		BurstResult{Lib: "rueidis", Processes: 256, Runs: ok[:2]},
		BurstResult{Lib: "redsync", Processes: 64, Runs: ok},
		BurstResult{Lib: "goredis", Processes: 64, Runs: burstRuns(repeat(12000, 5), []time.Duration{s, s, s, s, 2500 * time.Millisecond}, repeat(64, 5), repeat(0, 5), repeat[int64](2, 5))},
		BurstResult{Lib: "redigo", Processes: 64, Runs: ok},
		BurstResult{Lib: "rueidis", Processes: 64, Runs: ok},
		BurstResult{Lib: "valkey", Processes: 64, Runs: ok},
	)
}

func TestBurstTargets(t *testing.T) {
	r := sampleResults()
	withBursts(r)
	rows := r.burstTargets()
	five := func(x string) string { return strings.TrimSuffix(strings.Repeat(x+", ", 5), ", ") }
	want := []struct {
		target   string
		n        int
		baseline string
		cells    []string // goredis, redigo, rueidis, valkey
		overall  Verdict
	}{
		{"no 2s window without a grant, in 5 of 5 runs", 256, five("3.00 s*") + " (0 of 5 runs)",
			[]string{five("1.00 s") + " (5 of 5 runs) PASS", "1.00 s, 1.00 s, 2.00 s*, 1.00 s, 1.00 s (4 of 5 runs) MISS", "1.00 s, 1.00 s (2 of 2 runs)", "—"}, Miss},
		{"grants/s ≥ redsync's in the same run, in 5 of 5 runs", 256, five("1,000 grants/s"),
			[]string{five("1.20×") + " (5 of 5 runs) PASS", "1.20×, 1.20×, 1.20×, 0.90×*, 1.20× (4 of 5 runs) MISS", "1.20×, 1.20× (2 of 2 runs)", "—"}, Miss},
		{"≥ 90% of processes served, in 5 of 5 runs", 256, five("78%*") + " (0 of 5 runs)",
			[]string{five("98%") + " (5 of 5 runs) PASS", "98%, 78%*, 98%, 98%, 98% (4 of 5 runs) MISS", "98%, 98% (2 of 2 runs)", "—"}, Miss},
		{"0 overlaps of critical sections, in 5 of 5 runs", 256, five("0") + " (5 of 5 runs)",
			[]string{five("0") + " (5 of 5 runs) PASS", "0, 0, 0, 0, 1* (4 of 5 runs) MISS", "0, 0 (2 of 2 runs)", "—"}, Miss},
		{"each node accepts ≤ 4 connections per process over the run, in 5 of 5 runs", 256, five("1.00") + " (5 of 5 runs)",
			[]string{five("2.00") + " (5 of 5 runs) PASS", "2.00, 2.00, 2.00, 5.00*, 2.00 (4 of 5 runs) MISS", "2.00, 2.00 (2 of 2 runs)", "—"}, Miss},
		{"no 2s window without a grant, in 5 of 5 runs", 64, five("1.00 s") + " (5 of 5 runs)",
			[]string{"1.00 s, 1.00 s, 1.00 s, 1.00 s, 2.50 s* (4 of 5 runs) MISS", five("1.00 s") + " (5 of 5 runs) PASS",
				five("1.00 s") + " (5 of 5 runs) PASS", five("1.00 s") + " (5 of 5 runs) PASS"}, Miss},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		row := rows[i]
		if row.Target != w.target || !strings.HasPrefix(row.Scenario, "cold burst: "+strconv.Itoa(w.n)+" processes started at once") || row.Baseline != w.baseline {
			t.Errorf("row %d: %q on %q, redsync %q; want %q on %d processes, %q", i, row.Target, row.Scenario, row.Baseline, w.target, w.n, w.baseline)
			continue
		}
		checkCells(t, row, w.cells, w.overall)
	}
	if !strings.Contains(rows[0].Note, "judged on 5 runs or more") {
		t.Errorf("note %q; want it to say a pass needs 5 runs", rows[0].Note)
	}
	if rows[5].Note != "" {
		t.Errorf("64 processes, every backend 5 runs: note %q; want none", rows[5].Note)
	}
}

// TestBurstTargetsPassOnlyOnFiveRuns checks that runs within a target pass
// it only from the fifth on, and that a target no backend ran is not
// measured.
func TestBurstTargetsPassOnlyOnFiveRuns(t *testing.T) {
	const s = time.Second
	for runs, want := range map[int]Verdict{0: NotMeasured, 1: NotMeasured, 4: NotMeasured, 5: Pass, 6: Pass} {
		r := sampleResults()
		for _, lib := range r.Libraries {
			if runs > 0 {
				r.Burst = append(r.Burst, BurstResult{Lib: lib.ID, Processes: 64,
					Runs: burstRuns(repeat(100, runs), repeat(s, runs), repeat(64, runs), repeat(0, runs), repeat[int64](1, runs))})
			}
		}
		if got := r.burstTargets()[5].Overall; got != want {
			t.Errorf("%d runs within the target: %v; want %v", runs, got, want)
		}
	}
}
