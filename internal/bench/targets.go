package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Verdict is a target's outcome.
type Verdict int

const (
	NotMeasured Verdict = iota // the run did not measure it, or cannot yet
	Pass
	Miss
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "PASS"
	case Miss:
		return "MISS"
	}
	return "not measured"
}

// TargetRow is one target of the performance issue, judged for each
// redlock backend against redsync measured in the same run.
type TargetRow struct {
	Target   string // as the issue states it
	Scenario string // the case it is judged on
	Baseline string // redsync's own number, for scale
	Cells    []TargetCell
	// Rule says how the cells make the overall verdict: every backend must
	// pass, or the best one.
	Rule    string
	Overall Verdict
	Note    string
}

// TargetCell is one backend's measurement against a target.
type TargetCell struct {
	Lib     string
	Value   string
	Verdict Verdict
}

// Rules combining the backends' verdicts.
const (
	ruleEvery = "every backend"
	ruleBest  = "best backend"
)

// The hot-key and uncontended cases the targets are judged on.
const (
	targetContenders  = 8
	targetGoroutines  = 64
	targetFairRunTime = 10 * time.Second
)

// Targets judges the run against the targets.
func Targets(r *Results) []TargetRow {
	w0, w1 := time.Duration(0), time.Millisecond
	hotCase := func(w time.Duration) string {
		return fmt.Sprintf("hot key, %d contenders, %s of work", targetContenders, fmtWork(w))
	}
	handoffLatency := func(p func(Dist) time.Duration) hotMeasure {
		return func(h, _ *HotResult) (float64, string) {
			if h.Handoffs == 0 {
				return math.NaN(), "no hand-offs"
			}
			return float64(p(h.Handoff)), fmtDur(p(h.Handoff))
		}
	}
	p50 := func(d Dist) time.Duration { return d.P50 }
	p99 := func(d Dist) time.Duration { return d.P99 }
	ratio := func(rate func(*HotResult) float64) hotMeasure {
		return func(h, b *HotResult) (float64, string) {
			if b == nil {
				return math.NaN(), missing
			}
			x := Ratio(rate(h), rate(b))
			return x, fmtRatio(x)
		}
	}
	handoffs := (*HotResult).HandoffsPerSec
	grants := (*HotResult).GrantsPerSec
	rows := []TargetRow{
		r.hotTarget("hand-off p50 ≤ 1 ms", hotCase(w0), w0,
			func(b *HotResult) string { return fmtDur(b.Handoff.P50) },
			handoffLatency(p50), lessEq(float64(time.Millisecond))),
		r.hotTarget("hand-off p99 ≤ 10 ms", hotCase(w0), w0,
			func(b *HotResult) string { return fmtDur(b.Handoff.P99) },
			handoffLatency(p99), lessEq(float64(10*time.Millisecond))),
		r.hotTarget("hand-offs/s to a different holder ≥ 50× redsync's", hotCase(w0), w0,
			func(b *HotResult) string { return fmtRate(handoffs(b)) + " hand-offs/s" },
			ratio(handoffs), atLeast(50)),
		r.hotTarget("grants/s ≥ 1.5× redsync's with 1 ms of work inside", hotCase(w1), w1,
			func(b *HotResult) string { return fmtRate(grants(b)) + " grants/s" },
			ratio(grants), atLeast(1.5)),
		r.fairTarget(),
		r.uncontendedTarget(1, 1.5, ruleEvery),
		r.uncontendedTarget(targetGoroutines, 4, ruleBest),
		r.allocTarget(),
	}
	return rows
}

// hotMeasure returns a hot-key result's number for a target, and its text,
// given redsync's result of the same case (nil if not measured).
type hotMeasure func(h, base *HotResult) (float64, string)

// judge turns a measured number into a verdict.
type judge func(x float64) Verdict

// lessEq passes numbers up to limit; NaN (nothing to time) misses.
func lessEq(limit float64) judge {
	return func(x float64) Verdict { return verdict(x <= limit) }
}

// atLeast passes numbers from limit on; NaN (no baseline) is not measured.
func atLeast(limit float64) judge {
	return func(x float64) Verdict {
		if math.IsNaN(x) {
			return NotMeasured
		}
		return verdict(x >= limit)
	}
}

func verdict(ok bool) Verdict {
	if ok {
		return Pass
	}
	return Miss
}

// hotTarget judges a hot-key target for every backend on the case of
// targetContenders with work; baseText shows redsync's own number.
func (r *Results) hotTarget(target, scenario string, work time.Duration, baseText func(*HotResult) string, measure hotMeasure, j judge) TargetRow {
	row := TargetRow{Target: target, Scenario: scenario, Rule: ruleEvery}
	b := r.hotOf(r.baseline(), targetContenders, work)
	if b != nil {
		row.Baseline = baseText(b)
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if h := r.hotOf(lib.ID, targetContenders, work); h != nil {
			x, text := measure(h, b)
			cell.Value, cell.Verdict = text, j(x)
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// fairTarget reports the fairness-mode target, which the public API cannot
// express yet: the default mode's fairness is shown for reference.
func (r *Results) fairTarget() TargetRow {
	row := TargetRow{
		Target:   fmt.Sprintf("fair mode: max/min grants per client ≤ 1.5 over a %v run", targetFairRunTime),
		Scenario: fmt.Sprintf("hot key, %d contenders, 0 ms of work (default mode, for reference)", targetContenders),
		Rule:     ruleEvery,
		Note:     "the public API has no fairness mode yet, so the target cannot be measured; the cells show the default mode",
	}
	if b := r.hotOf(r.baseline(), targetContenders, 0); b != nil {
		row.Baseline = fmtFairness(b.Fairness, b.Starved)
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if h := r.hotOf(lib.ID, targetContenders, 0); h != nil {
			cell.Value = fmtFairness(h.Fairness, h.Starved)
		}
		row.Cells = append(row.Cells, cell)
	}
	return row
}

// uncontendedTarget judges the ratio of cycles/s over redsync's with g
// goroutines.
func (r *Results) uncontendedTarget(g int, factor float64, rule string) TargetRow {
	row := TargetRow{
		Target:   fmt.Sprintf("uncontended, %s: ≥ %s× redsync's cycles/s", goroutines(g), trimFloat(factor)),
		Scenario: fmt.Sprintf("uncontended, %s on keys of their own", goroutines(g)),
		Rule:     rule,
	}
	if rule == ruleBest {
		row.Target += " on the best backend"
	}
	b := r.uncontendedOf(r.baseline(), g)
	if b != nil {
		row.Baseline = fmtRate(b.PerSec()) + " cycles/s"
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if u := r.uncontendedOf(lib.ID, g); u != nil && b != nil {
			x := Ratio(u.PerSec(), b.PerSec())
			cell.Value, cell.Verdict = fmtRatio(x), atLeast(factor)(x)
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(rule, row.Cells)
	return row
}

// allocTarget judges allocations per cycle against redsync's.
func (r *Results) allocTarget() TargetRow {
	row := TargetRow{
		Target:   "allocations per uncontended lock+unlock: fewer than redsync's",
		Scenario: "one goroutine, lock+unlock back to back",
		Rule:     ruleEvery,
	}
	b := r.allocsOf(r.baseline())
	if b != nil {
		row.Baseline = trimFloat(b.Allocs) + " allocs"
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if a := r.allocsOf(lib.ID); a != nil && b != nil {
			cell.Value, cell.Verdict = trimFloat(a.Allocs), verdict(a.Allocs < b.Allocs)
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// combine makes the overall verdict of a row's cells by rule. Nothing
// measured gives NotMeasured.
func combine(rule string, cells []TargetCell) Verdict {
	var pass, miss int
	for _, c := range cells {
		switch c.Verdict {
		case Pass:
			pass++
		case Miss:
			miss++
		}
	}
	switch {
	case pass+miss == 0:
		return NotMeasured
	case rule == ruleBest:
		return verdict(pass > 0)
	}
	return verdict(miss == 0 && pass == len(cells))
}

// goroutines says "1 goroutine" or "N goroutines".
func goroutines(n int) string {
	if n == 1 {
		return "1 goroutine"
	}
	return fmt.Sprintf("%d goroutines", n)
}

// trimFloat formats x with at most one decimal: "1.5", "4", "142"
// (234.97 is "235").
func trimFloat(x float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(x, 'f', 1, 64), ".0")
}

// baseline returns the ID of the comparison target.
func (r *Results) baseline() string {
	for _, l := range r.Libraries {
		if l.Baseline {
			return l.ID
		}
	}
	return ""
}

// backends returns the libraries other than the baseline.
func (r *Results) backends() []Library {
	var out []Library
	for _, l := range r.Libraries {
		if !l.Baseline {
			out = append(out, l)
		}
	}
	return out
}

func (r *Results) hotOf(lib string, contenders int, work time.Duration) *HotResult {
	for i := range r.Hot {
		if h := &r.Hot[i]; h.Lib == lib && h.Contenders == contenders && h.Work == work {
			return h
		}
	}
	return nil
}

func (r *Results) uncontendedOf(lib string, goroutines int) *UncontendedResult {
	for i := range r.Uncontended {
		if u := &r.Uncontended[i]; u.Lib == lib && u.Goroutines == goroutines {
			return u
		}
	}
	return nil
}

func (r *Results) latencyOf(lib string) *LatencyResult {
	for i := range r.Latency {
		if l := &r.Latency[i]; l.Lib == lib {
			return l
		}
	}
	return nil
}

func (r *Results) allocsOf(lib string) *AllocResult {
	for i := range r.Allocs {
		if a := &r.Allocs[i]; a.Lib == lib {
			return a
		}
	}
	return nil
}
