package bench

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The burst issue's targets are judged on the cold-burst cases, each run
// of a case on its own: a target passes when every one of at least
// burstMinRuns runs meets it, and misses as soon as one run does not.
const (
	burstMost    = 256
	burstMany    = 64
	burstMinRuns = 5
	burstStall   = 2 * time.Second // no window this long without a grant
	burstServed  = 0.9             // share of the processes served at least once
	burstConns   = 4               // connections a node accepts per process over a run
)

// burstOf returns lib's result in the cold-burst case of n processes.
func (r *Results) burstOf(lib string, n int) *BurstResult {
	for i := range r.Burst {
		if b := &r.Burst[i]; b.Lib == lib && b.Processes == n {
			return b
		}
	}
	return nil
}

// burstCheck judges one run against a target, given redsync's run of the
// same round (nil if it has none): whether the run was judged, whether it
// met the target, and its number as the cell shows it.
type burstCheck func(run, base *BurstRun) (judged, ok bool, text string)

// burstScenario names the case of n processes a target is judged on.
func (r *Results) burstScenario(n int) string {
	cfg := &r.Config
	return fmt.Sprintf("cold burst: %d processes started at once on one key, no warm-up, TTL %v, %s of work, runs of %v, %d nodes",
		n, cfg.BurstTTL, fmtWork(cfg.BurstWork), cfg.BurstRun, r.Nodes)
}

// burstTargets judges the burst issue's targets: at burstMost processes
// no stall, grants/s against redsync's in the same run, the processes
// served, no overlap and the connections per process; at burstMany no
// stall.
func (r *Results) burstTargets() []TargetRow {
	stall := func(run, _ *BurstRun) (bool, bool, string) {
		return true, run.Stall < burstStall, fmtDur(run.Stall)
	}
	grants := func(run, base *BurstRun) (bool, bool, string) {
		if base == nil { // redsync's own cell, or no run of its in the round
			return false, false, fmtRate(run.GrantsPerSec()) + " grants/s"
		}
		x := Ratio(run.GrantsPerSec(), base.GrantsPerSec())
		if math.IsNaN(x) { // neither granted anything
			return true, false, "no grant"
		}
		return true, x >= 1, fmtRatio(x)
	}
	served := func(run, _ *BurstRun) (bool, bool, string) {
		x := run.ServedShare()
		return !math.IsNaN(x), x >= burstServed, fmt.Sprintf("%.0f%%", 100*x)
	}
	overlaps := func(run, _ *BurstRun) (bool, bool, string) {
		return true, run.Overlaps() == 0, fmt.Sprint(run.Overlaps())
	}
	conns := func(run, _ *BurstRun) (bool, bool, string) {
		x := run.ConnsPerProcess()
		return !math.IsNaN(x), x <= burstConns, fmtConns(x)
	}
	runs := fmt.Sprintf(", in %d of %d runs", burstMinRuns, burstMinRuns)
	return []TargetRow{
		r.burstTarget(fmt.Sprintf("no %v window without a grant%s", burstStall, runs), burstMost, stall),
		r.burstTarget("grants/s ≥ redsync's in the same run"+runs, burstMost, grants),
		r.burstTarget(fmt.Sprintf("≥ %.0f%% of processes served%s", 100*burstServed, runs), burstMost, served),
		r.burstTarget("0 overlaps of critical sections"+runs, burstMost, overlaps),
		r.burstTarget(fmt.Sprintf("each node accepts ≤ %d connections per process over the run%s", burstConns, runs), burstMost, conns),
		r.burstTarget(fmt.Sprintf("no %v window without a grant%s", burstStall, runs), burstMany, stall),
	}
}

// burstTarget judges a target on every run of each backend in the case of
// n processes; redsync's runs show in the baseline, unjudged.
func (r *Results) burstTarget(target string, n int, check burstCheck) TargetRow {
	row := TargetRow{Target: target, Scenario: r.burstScenario(n), Rule: ruleEvery}
	base := r.burstOf(r.baseline(), n)
	if base != nil {
		row.Baseline, _, _ = burstCell(base, nil, check)
	}
	short := false
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if h := r.burstOf(lib.ID, n); h != nil {
			var judged, missed int
			cell.Value, judged, missed = burstCell(h, base, check)
			switch {
			case missed > 0:
				cell.Verdict = Miss
			case judged >= burstMinRuns:
				cell.Verdict = Pass
			default:
				short = true
			}
		}
		row.Cells = append(row.Cells, cell)
	}
	if short {
		row.Note = fmt.Sprintf("a pass is judged on %d runs or more; a run that misses is a miss", burstMinRuns)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// burstCell is a result's cell against check: each run's number, an
// asterisk marking a run that missed, and how many runs met the target
// of those judged: "1.20 s, 2.31 s*, 0.90 s (2 of 3 runs)". It returns the
// cell and the numbers of runs judged and missed. Run i of res is
// compared with run i of base, the same round.
func burstCell(res, base *BurstResult, check burstCheck) (text string, judged, missed int) {
	if len(res.Runs) == 0 {
		return missing, 0, 0
	}
	parts := make([]string, len(res.Runs))
	met := 0
	for i := range res.Runs {
		var b *BurstRun
		if base != nil && i < len(base.Runs) {
			b = &base.Runs[i]
		}
		j, ok, text := check(&res.Runs[i], b)
		parts[i] = text
		if j {
			judged++
			if ok {
				met++
			} else {
				parts[i] += "*"
			}
		}
	}
	if judged == 0 {
		return strings.Join(parts, ", "), 0, 0
	}
	return fmt.Sprintf("%s (%d of %d runs)", strings.Join(parts, ", "), met, judged), judged, judged - met
}
