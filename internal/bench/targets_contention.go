package bench

import (
	"fmt"
	"math"
	"time"
)

// The contention issue's targets are judged on the hot-key cases with a
// process per contender: a few contenders, many, and the most.
const (
	contentionFew  = 8
	contentionMany = 64
	contentionMost = 256
	// contentionMinRuns is the fewest runs of a case the no-collapse
	// target is judged on: with fewer there is hardly a median.
	contentionMinRuns = 3
	// contentionScaling bounds the servers' work per hand-off at the most
	// contenders over that at the few.
	contentionScaling = 2
)

// rateRatio measures a rate of a hot-key result over redsync's.
func rateRatio(rate func(*HotResult) float64) hotMeasure {
	return func(h, b *HotResult) (float64, string) {
		if b == nil {
			return math.NaN(), missing
		}
		x := Ratio(rate(h), rate(b))
		return x, fmtRatio(x)
	}
}

// contentionTargets judges the contention issue's targets on the process
// cases: at contentionMany contenders, with and without work, the rates
// against redsync's, the p99 wait, max/min (in the fair mode too) and no
// collapse; at contentionFew, the hand-offs and the grants with work; and
// the servers' commands and CPU time per hand-off from the few to the
// most contenders.
func (r *Results) contentionTargets() []TargetRow {
	grants := (*HotResult).GrantsPerSec
	handoffs := (*HotResult).HandoffsPerSec
	grantsText := func(b *HotResult) string { return fmtRate(grants(b)) + " grants/s" }
	handoffsText := func(b *HotResult) string { return fmtRate(handoffs(b)) + " hand-offs/s" }
	scenario := func(c int, w time.Duration) string {
		return fmt.Sprintf("hot key, %d contenders %s, %s of work", c, ProcessPerContender.phrase(), fmtWork(w))
	}
	waitP99 := func(h, _ *HotResult) (float64, string) {
		if h.WaitAll.N == 0 {
			return math.NaN(), "no Lock calls"
		}
		return float64(h.WaitAll.P99), fmtDur(h.WaitAll.P99)
	}
	maxMin := func(h, _ *HotResult) (float64, string) { return h.Fairness, fmtFairness(h.Fairness, h.Starved) }
	var rows []TargetRow
	for _, w := range []time.Duration{0, time.Millisecond} {
		c := contentionMany
		rows = append(rows,
			r.hotTargetAt("grants/s ≥ 1× redsync's", scenario(c, w), ProcessPerContender, c, w, grantsText, rateRatio(grants), atLeast(1)),
			r.hotTargetAt("hand-offs/s to a different holder ≥ 5× redsync's", scenario(c, w), ProcessPerContender, c, w, handoffsText, rateRatio(handoffs), atLeast(5)),
			r.hotTargetAt("p99 wait ≤ 250 ms (calls still waiting at the end included)", scenario(c, w), ProcessPerContender, c, w,
				func(b *HotResult) string { _, t := waitP99(b, nil); return t }, waitP99, lessEq(float64(250*time.Millisecond))),
			r.hotTargetAt("max/min grants per contender ≤ 2", scenario(c, w), ProcessPerContender, c, w,
				func(b *HotResult) string { _, t := maxMin(b, nil); return t }, maxMin, lessEq(2)),
			r.fairModeTarget("fair mode: max/min grants per contender ≤ 1.2", scenario(c, w), ProcessPerContender, c, w, 1.2),
			r.collapseTarget(scenario(c, w), c, w),
		)
	}
	rows = append(rows,
		r.hotTargetAt("hand-offs/s to a different holder ≥ 50× redsync's", scenario(contentionFew, 0), ProcessPerContender, contentionFew, 0,
			handoffsText, rateRatio(handoffs), atLeast(50)),
		r.hotTargetAt("grants/s ≥ 1.2× redsync's with 1 ms of work inside", scenario(contentionFew, time.Millisecond), ProcessPerContender, contentionFew, time.Millisecond,
			grantsText, rateRatio(grants), atLeast(1.2)),
	)
	for _, w := range []time.Duration{0, time.Millisecond} {
		rows = append(rows, r.scalingTarget(serverCommands, w), r.scalingTarget(serverCPU, w))
	}
	return rows
}

// fairModeTarget judges the fair mode's max/min grants per contender on a
// hot-key case, limit at most: each backend's cell is its fair mode's.
func (r *Results) fairModeTarget(target, scenario string, mode Clients, contenders int, work time.Duration, limit float64) TargetRow {
	row := TargetRow{Target: target, Scenario: scenario, Rule: ruleEvery}
	if b := r.hotOf(r.baseline(), mode, contenders, work); b != nil {
		row.Baseline = fmtFairness(b.Fairness, b.Starved)
	}
	fair := r.fairBackends()
	if len(fair) == 0 {
		row.Note = "the run has no fair mode"
		for _, lib := range r.backends() {
			row.Cells = append(row.Cells, TargetCell{Lib: lib.ID, Value: missing})
		}
		return row
	}
	row.Scenario += ", redlock+BACKEND " + fair[0].Mode
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		for _, f := range fair {
			if h := r.hotOf(f.ID, mode, contenders, work); f.Backend == lib.Backend && h != nil {
				cell.Value, cell.Verdict = fmtFairness(h.Fairness, h.Starved), lessEq(limit)(h.Fairness)
			}
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// collapseTarget judges that no run of the process case of contenders
// with work fell below half the median of its runs (Collapsed).
func (r *Results) collapseTarget(scenario string, contenders int, work time.Duration) TargetRow {
	row := TargetRow{Target: "no collapse: no run's grants/s below half the median of the case's runs", Scenario: scenario, Rule: ruleEvery}
	text := func(h *HotResult) string {
		c := h.Collapsed()
		if len(c) == 0 {
			return fmt.Sprintf("none of %d runs", len(h.Runs))
		}
		return fmt.Sprintf("%d of %d runs (%s grants/s)", len(c), len(h.Runs), fmtRuns(h.Runs, c))
	}
	if b := r.hotOf(r.baseline(), ProcessPerContender, contenders, work); b != nil {
		row.Baseline = text(b)
	}
	judged := true
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if h := r.hotOf(lib.ID, ProcessPerContender, contenders, work); h != nil {
			cell.Value = text(h)
			if len(h.Runs) >= contentionMinRuns {
				cell.Verdict = verdict(len(h.Collapsed()) == 0)
			} else {
				judged = false
			}
		}
		row.Cells = append(row.Cells, cell)
	}
	if !judged {
		row.Note = fmt.Sprintf("judged on cases of %d runs or more", contentionMinRuns)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// A serverWork is what the servers spend per hand-off: commands or CPU
// time.
type serverWork int

const (
	serverCommands serverWork = iota
	serverCPU
)

// perHandoff returns the servers' work per hand-off in a case, and its
// text; NaN with the reason when there is none to give.
func (k serverWork) perHandoff(h *HotResult) (float64, string) {
	switch {
	case h == nil:
		return math.NaN(), missing
	case k == serverCommands && h.Commands == nil, k == serverCPU && h.ServerCPU <= 0:
		return math.NaN(), "not counted"
	case h.Handoffs == 0:
		return math.Inf(1), "no hand-offs"
	case k == serverCommands:
		x := h.CommandsPerHandoff()
		return x, fmtRate(x)
	}
	x := h.ServerCPUPerHandoff()
	return float64(x), fmtDur(x)
}

// scalingTarget judges the servers' work per hand-off in the process case
// of contentionMost contenders with work against that of contentionFew.
func (r *Results) scalingTarget(k serverWork, work time.Duration) TargetRow {
	what, source := "Redis commands", "INFO commandstats"
	if k == serverCPU {
		what, source = "servers' CPU time", "INFO cpu"
	}
	row := TargetRow{
		Target: fmt.Sprintf("%s per hand-off at %d contenders ≤ %d× that at %d", what, contentionMost, contentionScaling, contentionFew),
		Scenario: fmt.Sprintf("hot key, %d and %d contenders %s, %s of work; %s of the %d servers over the runs",
			contentionFew, contentionMost, ProcessPerContender.phrase(), fmtWork(work), source, r.Nodes),
		Rule: ruleEvery,
	}
	cell := func(lib string) (string, Verdict) {
		few := r.hotOf(lib, ProcessPerContender, contentionFew, work)
		most := r.hotOf(lib, ProcessPerContender, contentionMost, work)
		if few == nil || most == nil {
			return missing, NotMeasured
		}
		x, xt := k.perHandoff(few)
		y, yt := k.perHandoff(most)
		text := xt + " → " + yt
		switch {
		case math.IsNaN(x) || math.IsNaN(y):
			return text, NotMeasured
		case math.IsInf(x, 1) || math.IsInf(y, 1):
			return text, Miss
		}
		ratio := Ratio(y, x)
		return fmt.Sprintf("%s (%s)", text, fmtRatio(ratio)), verdict(ratio <= contentionScaling)
	}
	row.Baseline, _ = cell(r.baseline())
	if row.Baseline == missing {
		row.Baseline = ""
	}
	for _, lib := range r.backends() {
		c := TargetCell{Lib: lib.ID}
		c.Value, c.Verdict = cell(lib.ID)
		row.Cells = append(row.Cells, c)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}
