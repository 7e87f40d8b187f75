package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// procResult is a made-up result of a process case over 5 runs of 1 s.
func procResult(lib string, contenders int, work time.Duration, grants, handoffs float64, waitP99 time.Duration, fairness float64, runs []float64) HotResult {
	h := HotResult{Lib: lib, Clients: ProcessPerContender, Contenders: contenders, Work: work, Window: 5 * time.Second,
		Grants: int(grants * 5), Handoffs: int(handoffs * 5), WaitAll: Dist{N: 100, P50: time.Millisecond, P99: waitP99},
		Fairness: fairness, Runs: runs}
	if math.IsInf(fairness, 1) {
		h.Starved = 2
	}
	return h
}

// withProcs adds process cases to a run that has the fair mode: at 64
// contenders redsync passes 2,000 grants/s and 200 hand-offs/s; goredis 1.5×
// and 7.5× that with a collapsed run; redigo half and 2.5× with starved
// contenders; rueidis as goredis but steady. At 8 and 256 contenders, the
// servers' work per hand-off grows 1.5× on goredis, the hand-offs vanish
// on redigo, and rueidis's commands were not counted.
func withProcs(r *Results) {
	steady := []float64{1, 1, 1, 1, 1}
	for _, w := range []time.Duration{0, time.Millisecond} {
		r.Hot = append(r.Hot,
			procResult("redsync", 64, w, 2000, 200, 600*time.Millisecond, 5, steady),
			procResult("goredis", 64, w, 3000, 1500, 200*time.Millisecond, 1.5, []float64{3000, 3000, 3000, 1000, 3000}),
			procResult("redigo", 64, w, 1000, 500, 300*time.Millisecond, math.Inf(1), steady),
			procResult("rueidis", 64, w, 3000, 1500, 200*time.Millisecond, 1.5, steady),
			procResult("goredis-fair", 64, w, 900, 900, 100*time.Millisecond, 1.1, steady),
			procResult("rueidis-fair", 64, w, 900, 900, 100*time.Millisecond, 1.3, steady),
		)
	}
	few := []HotResult{
		procResult("redsync", 8, 0, 2000, 30, 0, 2, steady),
		procResult("goredis", 8, 0, 1500, 1500, 0, 1, steady),
		procResult("redigo", 8, 0, 1200, 1200, 0, 1, steady),
		procResult("rueidis", 8, 0, 3000, 3000, 0, 1, steady),
		procResult("redsync", 8, time.Millisecond, 600, 30, 0, 2, steady),
		procResult("goredis", 8, time.Millisecond, 720, 720, 0, 1, steady),
		procResult("redigo", 8, time.Millisecond, 600, 600, 0, 1, steady),
		procResult("rueidis", 8, time.Millisecond, 900, 900, 0, 1, steady),
	}
	most := []HotResult{
		procResult("redsync", 256, 0, 100, 20, 0, 2, steady),
		procResult("goredis", 256, 0, 100, 100, 0, 1, steady),
		procResult("redigo", 256, 0, 0, 0, 0, math.NaN(), steady),
		procResult("rueidis", 256, 0, 100, 100, 0, 1, steady),
	}
	// Commands and CPU per hand-off: redsync 1,000 → 4,000 and 10 ms →
	// 20 ms; goredis 100 → 150 and 1 ms → 3 ms; redigo 100 → no hand-offs.
	perHandoff := map[string][2]float64{"redsync": {1000, 4000}, "goredis": {100, 150}, "redigo": {100, 0}, "rueidis": {80, 80}}
	cpu := map[string][2]time.Duration{"redsync": {10 * time.Millisecond, 20 * time.Millisecond}, "goredis": {time.Millisecond, 3 * time.Millisecond},
		"redigo": {time.Millisecond, 0}, "rueidis": {time.Millisecond, time.Millisecond}}
	for i := range few {
		h := &few[i]
		if h.Work == 0 {
			h.Commands = map[string]int64{"evalsha": int64(perHandoff[h.Lib][0]) * int64(h.Handoffs)}
			h.ServerCPU = cpu[h.Lib][0] * time.Duration(h.Handoffs)
		}
	}
	for i := range most {
		h := &most[i]
		h.Commands = map[string]int64{"evalsha": int64(perHandoff[h.Lib][1]) * int64(h.Handoffs), "publish": 7 * int64(h.Handoffs)}
		h.ServerCPU = cpu[h.Lib][1]*time.Duration(h.Handoffs) + time.Second // redigo: CPU spent, no hand-off
		if h.Lib == "rueidis" {
			h.Commands = nil // the servers did not tell
		}
	}
	r.Hot = append(append(r.Hot, few...), most...)
}

func TestContentionTargets(t *testing.T) {
	r := sampleResults()
	withFairMode(r)
	withProcs(r)
	rows := r.contentionTargets()
	want := []struct {
		target   string
		baseline string
		cells    []string // goredis, redigo, rueidis; valkey has no process cases here
		overall  Verdict
	}{
		{"grants/s ≥ 1× redsync's", "2,000 grants/s", []string{"1.50× PASS", "0.50× MISS", "1.50× PASS"}, Miss},
		{"hand-offs/s to a different holder ≥ 5× redsync's", "200 hand-offs/s", []string{"7.50× PASS", "2.50× MISS", "7.50× PASS"}, Miss},
		{"p99 wait ≤ 250 ms", "600 ms", []string{"200 ms PASS", "300 ms MISS", "200 ms PASS"}, Miss},
		{"max/min grants per contender ≤ 2", "5.00", []string{"1.50 PASS", "∞ (2 starved) MISS", "1.50 PASS"}, Miss},
		{"fair mode: max/min grants per contender ≤ 1.2", "5.00", []string{"1.10 PASS", "—", "1.30 MISS"}, Miss},
		{"no collapse", "none of 5 runs", []string{"1 of 5 runs (3,000, 3,000, 3,000, 1,000*, 3,000 grants/s) MISS", "none of 5 runs PASS", "none of 5 runs PASS"}, Miss},
	}
	for i, w := range append(want, want...) { // 0 and 1 ms of work alike
		row := rows[i]
		if !strings.HasPrefix(row.Target, w.target) || row.Baseline != w.baseline {
			t.Errorf("row %d: %q, redsync %q; want %q, %q", i, row.Target, row.Baseline, w.target, w.baseline)
			continue
		}
		checkCells(t, row, append(w.cells, "—"), w.overall)
	}
	rest := []struct {
		target   string
		scenario string
		baseline string
		cells    []string
		overall  Verdict
	}{
		{"hand-offs/s to a different holder ≥ 50× redsync's", "8 contenders in processes of their own, 0 ms", "30 hand-offs/s",
			[]string{"50.0× PASS", "40.0× MISS", "100× PASS"}, Miss},
		{"grants/s ≥ 1.2× redsync's with 1 ms of work inside", "8 contenders in processes of their own, 1 ms", "600 grants/s",
			[]string{"1.20× PASS", "1.00× MISS", "1.50× PASS"}, Miss},
		{"Redis commands per hand-off at 256 contenders ≤ 2× that at 8", "0 ms of work", "1,000 → 4,007 (4.01×)",
			[]string{"100 → 157 (1.57×) PASS", "100 → no hand-offs MISS", "80 → not counted"}, Miss},
		{"servers' CPU time per hand-off at 256 contenders ≤ 2× that at 8", "0 ms of work", "10.0 ms → 30.0 ms (3.00×)",
			[]string{"1.00 ms → 5.00 ms (5.00×) MISS", "1.00 ms → no hand-offs MISS", "1.00 ms → 3.00 ms (3.00×) MISS"}, Miss},
		// No servers' counts with 1 ms of work at 8 contenders.
		{"Redis commands per hand-off at 256 contenders ≤ 2× that at 8", "1 ms of work", "", []string{"—", "—", "—"}, NotMeasured},
		{"servers' CPU time per hand-off at 256 contenders ≤ 2× that at 8", "1 ms of work", "", []string{"—", "—", "—"}, NotMeasured},
	}
	if len(rows) != 2*len(want)+len(rest) {
		t.Fatalf("%d rows, want %d", len(rows), 2*len(want)+len(rest))
	}
	for i, w := range rest {
		row := rows[2*len(want)+i]
		if !strings.HasPrefix(row.Target, w.target) || !strings.Contains(row.Scenario, w.scenario) || row.Baseline != w.baseline {
			t.Errorf("row %q on %q, redsync %q; want %q on %q, %q", row.Target, row.Scenario, row.Baseline, w.target, w.scenario, w.baseline)
			continue
		}
		checkCells(t, row, append(w.cells, "—"), w.overall)
	}
}

// checkCells checks a target row's cells, value and verdict, and its
// overall verdict.
func checkCells(t *testing.T, row TargetRow, cells []string, overall Verdict) {
	t.Helper()
	if len(row.Cells) != len(cells) {
		t.Errorf("%s: %d cells, want %d: %+v", row.Target, len(row.Cells), len(cells), row.Cells)
		return
	}
	for j, c := range row.Cells {
		got := c.Value
		if c.Verdict != NotMeasured {
			got += " " + c.Verdict.String()
		}
		if got != cells[j] {
			t.Errorf("%s on %s: %s cell %q, want %q", row.Target, row.Scenario, c.Lib, got, cells[j])
		}
	}
	if row.Overall != overall {
		t.Errorf("%s on %s: overall %v, want %v", row.Target, row.Scenario, row.Overall, overall)
	}
}

// TestCollapseTargetNeedsRuns checks that a case of fewer runs than the
// check needs is shown, not judged.
func TestCollapseTargetNeedsRuns(t *testing.T) {
	r := sampleResults()
	for _, lib := range r.Libraries {
		r.Hot = append(r.Hot, procResult(lib.ID, 64, 0, 100, 50, 0, 1, []float64{100, 0}))
	}
	row := r.collapseTarget("s", 64, 0)
	runs := "1 of 2 runs (100, 0.0* grants/s)"
	checkCells(t, row, []string{runs, runs, runs, runs}, NotMeasured)
	if !strings.Contains(row.Note, "3 runs or more") {
		t.Errorf("note %q; want it to say how many runs the check needs", row.Note)
	}
}

func TestProcsReport(t *testing.T) {
	r := sampleResults()
	withFairMode(r)
	withProcs(r)
	r.Hot[len(r.Hot)-1].MarkerViolations = 3
	for i := range r.Hot {
		if h := &r.Hot[i]; h.Clients == ProcessPerContender {
			h.ClockError, h.StartLag = 800*time.Nanosecond, 4*time.Millisecond
		}
	}
	md := Markdown(r)
	for _, want := range []string{
		"### A process per contender",
		"in this run the processes' mappings agreed within ±1 µs.",
		"(a process woken late on a busy machine, by then in line behind those already contending), 4.00 ms at most in this run.",
		"The cases are 3 runs of 1.5s with 8 contenders, 5 runs of 1.5s with 64 contenders and one run of 1.5s with 256 contenders, the libraries taking turns",
		"hot-key cases with a process per contender: 3 runs of 1.5s with 8 contenders, 5 runs",
		"#### 64 contenders, a process each, 0 ms of work inside",
		"| redlock+goredis | 3,000 | 1.50× | 1,500 | 7.50× | — | — | 1.00 ms / 200 ms | 0 | 1.50 | not counted | not counted | 4.00 ms | 0 |",
		"| redlock+goredis | 100 | 1.00× | 100 | 5.00× | — | — | 1.00 ms / 0 | 0 | 1.00 | 157 | 5.00 ms | 4.00 ms | 0 |",
		"| redlock+redigo | 0.0 | 0.00× | 0.0 | 0.00× | — | — | 1.00 ms / 0 | 0 | — | no hand-offs | no hand-offs | 4.00 ms | 0 |",
		"**3 grants found another holder on the shared marker**",
		"#### No collapse: grants/s of each run",
		"| redlock+goredis | 64 contenders, 0 ms of work | 3,000, 3,000, 3,000, 1,000*, 3,000 | 3,000 | **1 of 5** |",
		"| redlock+goredis fair | 64 contenders, 1 ms of work | 1.0, 1.0, 1.0, 1.0, 1.0 | 1.0 | 0 of 5 |",
		"`hotkey/procs/cN-wWORK/LIB`",
		"-proc-cases 8x1,64x1",
		"#### Fairness by default?",
		"| case | mode | hand-offs/s | wait p99 | max/min |",
		"The default mode is not made the fair one because under contention it already serves the waiters in order",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if svg := Chart(r); !strings.Contains(svg, "One hot key, a process per contender") || !strings.Contains(svg, "256 contenders, 0 ms work") {
		t.Error("chart lacks the process cases' panel")
	}
}
