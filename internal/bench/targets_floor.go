package bench

import (
	"fmt"
	"math"
	"time"
)

// The light-path issue's targets: the uncontended cycle against the bare
// floor measured in the same rounds, the servers' and the client's CPU per
// cycle and the allocations against redsync's, the fair mode against the
// default one, and the servers' work per hand-off against an uncontended
// cycle's.
const (
	floorBest       = 0.95 // of the floor, on the best backend
	floorEvery      = 0.85 // of the floor, on every backend
	clientCPUFactor = 0.7  // of redsync's client CPU per cycle
	fairWithin      = 0.85 // a mode's cycles/s (fair, fenced, guarded) over the default mode's
	handoffCPU      = 1.5  // servers' CPU per hand-off over an uncontended cycle's
	handoffFew      = 8    // the process case a hand-off's cost is judged on
)

// floorTargets judges the light-path issue's targets.
func (r *Results) floorTargets() []TargetRow {
	return []TargetRow{
		r.floorTarget(floorBest, ruleBest),
		r.floorTarget(floorEvery, ruleEvery),
		r.uncontendedTarget("32–64 goroutines", targetGoroutines, 1.5, ruleEvery),
		r.cpuTarget("servers' CPU per uncontended lock+unlock ≤ redsync's", 1, (*UncontendedResult).ServerCPUPerCycle),
		r.cpuTarget(fmt.Sprintf("client CPU per uncontended lock+unlock ≤ %s× redsync's", trimFloat(clientCPUFactor)), clientCPUFactor, (*UncontendedResult).CPUPerCycle),
		r.modeCostTarget("fair mode", r.fairBackends()),
		r.modeCostTarget("fencing", costBackends("fenced")),
		r.modeCostTarget("the restart guard", costBackends("guard")),
		r.handoffCPUTarget(),
	}
}

// floorTarget judges cycles/s with one goroutine over the bare floor's.
func (r *Results) floorTarget(factor float64, rule string) TargetRow {
	row := TargetRow{
		Target:   fmt.Sprintf("uncontended, 1 goroutine: ≥ %v of the bare floor's cycles/s", factor),
		Scenario: "uncontended, 1 goroutine; the floor measured in the same rounds",
		Rule:     rule,
	}
	if rule == ruleBest {
		row.Target += " on the best backend"
	}
	fl := r.uncontendedOf(FloorID, 1)
	if fl != nil {
		row.Baseline = "floor " + fmtRate(fl.PerSec()) + " cycles/s"
		if b := r.uncontendedOf(r.baseline(), 1); b != nil {
			row.Baseline += fmt.Sprintf(", redsync %s of it", fmtRatio(Ratio(b.PerSec(), fl.PerSec())))
		}
	} else {
		row.Note = "the run has no floor"
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if u := r.uncontendedOf(lib.ID, 1); u != nil && fl != nil {
			x := Ratio(u.PerSec(), fl.PerSec())
			cell.Value, cell.Verdict = fmtRatio(x), atLeast(factor)(x)
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(rule, row.Cells)
	return row
}

// cpuTarget judges a CPU time per uncontended cycle with one goroutine
// against factor times redsync's.
func (r *Results) cpuTarget(target string, factor float64, cpu func(*UncontendedResult) time.Duration) TargetRow {
	row := TargetRow{Target: target, Scenario: "uncontended, 1 goroutine", Rule: ruleEvery}
	b := r.uncontendedOf(r.baseline(), 1)
	var base time.Duration
	if b != nil {
		base = cpu(b)
	}
	if base > 0 {
		row.Baseline = fmtDur(base)
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if u := r.uncontendedOf(lib.ID, 1); u != nil && cpu(u) > 0 {
			cell.Value = fmtDur(cpu(u))
			if base > 0 {
				x := Ratio(float64(cpu(u)), float64(base))
				cell.Value += fmt.Sprintf(" (%s)", fmtRatio(x))
				cell.Verdict = lessEq(factor)(x)
			}
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// modeCostTarget judges a mode's uncontended cycles/s with one goroutine,
// over each of libs, against the default mode's over the same backend.
func (r *Results) modeCostTarget(mode string, libs []Library) TargetRow {
	row := TargetRow{
		Target:   fmt.Sprintf("%s, uncontended: ≥ %v of the default mode's cycles/s", mode, fairWithin),
		Scenario: "uncontended, 1 goroutine",
		Rule:     ruleEvery,
	}
	if len(libs) > 0 && libs[0].Options != "" {
		row.Scenario += ", " + libs[0].Options
	}
	judged := false
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		for _, f := range libs {
			u, fu := r.uncontendedOf(lib.ID, 1), r.uncontendedOf(f.ID, 1)
			if f.Backend == lib.Backend && u != nil && fu != nil {
				x := Ratio(fu.PerSec(), u.PerSec())
				cell.Value, cell.Verdict = fmtRatio(x), atLeast(fairWithin)(x)
				judged = true
			}
		}
		row.Cells = append(row.Cells, cell)
	}
	if !judged {
		row.Note = "the run did not measure the mode"
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// costBackends returns redlock over each backend in the cost mode named
// mode (costModes).
func costBackends(mode string) []Library {
	var out []Library
	for _, l := range CostLibraries() {
		if l.Mode == mode {
			out = append(out, l)
		}
	}
	return out
}

// handoffCPUTarget judges the servers' CPU per hand-off with handoffFew
// processes and no work against the servers' CPU per uncontended cycle
// with one goroutine, over the same backend.
func (r *Results) handoffCPUTarget() TargetRow {
	row := TargetRow{
		Target:   fmt.Sprintf("servers' CPU per hand-off ≤ %s× an uncontended cycle's", trimFloat(handoffCPU)),
		Scenario: fmt.Sprintf("hot key, %d contenders %s, 0 ms of work; uncontended, 1 goroutine", handoffFew, ProcessPerContender.phrase()),
		Rule:     ruleEvery,
	}
	ratio := func(id string) (float64, string) {
		h, u := r.hotOf(id, ProcessPerContender, handoffFew, 0), r.uncontendedOf(id, 1)
		if h == nil || u == nil || h.ServerCPUPerHandoff() <= 0 || u.ServerCPUPerCycle() <= 0 {
			return math.NaN(), missing
		}
		x := Ratio(float64(h.ServerCPUPerHandoff()), float64(u.ServerCPUPerCycle()))
		return x, fmt.Sprintf("%s (%s)", fmtDur(h.ServerCPUPerHandoff()), fmtRatio(x))
	}
	if _, text := ratio(r.baseline()); text != missing {
		row.Baseline = text
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if x, text := ratio(lib.ID); !math.IsNaN(x) {
			cell.Value, cell.Verdict = text, lessEq(handoffCPU)(x)
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}
