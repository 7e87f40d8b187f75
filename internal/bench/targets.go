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
// redlock backend against redsync measured in the same run, on one case.
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

// Rules combining the backends' verdicts: every backend must pass, the
// best one, or the one named after ruleOnly; a reported row has none.
const (
	ruleEvery    = "every backend"
	ruleBest     = "best backend"
	ruleOnly     = "only "
	ruleReported = "reported"
	// ruleMeasured: every backend measured must pass (the held-locks
	// cases run on some backends only).
	ruleMeasured = "every backend measured"
)

// The hot-key and uncontended cases the targets are judged on.
const (
	targetContenders  = 8
	targetGoroutines  = 64
	targetFairRunTime = 10 * time.Second
	targetFairness    = 1.5
)

// Targets judges the run against the targets. Each hot-key target
// is judged twice, on a row of its own: with the contenders sharing one
// client and with a client per contender.
func Targets(r *Results) []TargetRow {
	w0, w1 := time.Duration(0), time.Millisecond
	hotCase := func(mode Clients, w time.Duration) string {
		return fmt.Sprintf("hot key, %d contenders %s, %s of work", targetContenders, mode.phrase(), fmtWork(w))
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
	var rows []TargetRow
	hot := func(target string, w time.Duration, baseText func(*HotResult) string, measure hotMeasure, j judge) {
		for _, mode := range ClientModes {
			rows = append(rows, r.hotTarget(target, hotCase(mode, w), mode, w, baseText, measure, j))
		}
	}
	hot("hand-off p50 ≤ 1 ms", w0,
		func(b *HotResult) string { return fmtDur(b.Handoff.P50) },
		handoffLatency(p50), lessEq(float64(time.Millisecond)))
	hot("hand-off p99 ≤ 10 ms", w0,
		func(b *HotResult) string { return fmtDur(b.Handoff.P99) },
		handoffLatency(p99), lessEq(float64(10*time.Millisecond)))
	hot("hand-offs/s to a different holder ≥ 50× redsync's", w0,
		func(b *HotResult) string { return fmtRate(handoffs(b)) + " hand-offs/s" },
		ratio(handoffs), atLeast(50))
	hot("grants/s ≥ 1.5× redsync's with 1 ms of work inside", w1,
		func(b *HotResult) string { return fmtRate(grants(b)) + " grants/s" },
		ratio(grants), atLeast(1.5))
	rows = append(rows, r.contentionTargets()...)
	rows = append(rows, r.burstTargets()...)
	rows = append(rows, r.heldTargets()...)
	rows = append(rows,
		r.fairTarget(),
		r.uncontendedTarget("1 goroutine", 1, 1.5, ruleEvery),
		r.uncontendedTarget("32–64 goroutines", targetGoroutines, 4, ruleBest),
		r.uncontendedTarget("1 goroutine", 1, 1, ruleEvery),
		r.uncontendedTarget("32–64 goroutines", targetGoroutines, 1, ruleEvery),
		r.uncontendedTarget("32–64 goroutines", targetGoroutines, 1.3, ruleOnly+targetDefaultBackend),
		r.allocTarget(),
		r.cpuRow(1),
		r.cpuRow(targetGoroutines),
	)
	return append(rows, r.floorTargets()...)
}

// targetDefaultBackend is the backend a target names on its own: the one
// most Go users would pick first.
const targetDefaultBackend = "goredis"

// cpuRow reports the client's CPU time per uncontended cycle with g
// goroutines, against redsync's; no target judges it.
func (r *Results) cpuRow(g int) TargetRow {
	row := TargetRow{
		Target:   "client CPU per uncontended lock+unlock (reported)",
		Scenario: fmt.Sprintf("uncontended, %s on keys of their own; getrusage of the client process over the case", goroutines(g)),
		Rule:     ruleReported,
	}
	cpu := func(u *UncontendedResult) string {
		if u == nil || u.CPUPerCycle() <= 0 {
			return missing
		}
		return fmtDur(u.CPUPerCycle())
	}
	b := r.uncontendedOf(r.baseline(), g)
	if b != nil {
		row.Baseline = cpu(b)
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: cpu(r.uncontendedOf(lib.ID, g))}
		if u := r.uncontendedOf(lib.ID, g); u != nil && b != nil && u.CPUPerCycle() > 0 && b.CPUPerCycle() > 0 {
			cell.Value += fmt.Sprintf(" (%s)", fmtRatio(Ratio(float64(u.CPUPerCycle()), float64(b.CPUPerCycle()))))
		}
		row.Cells = append(row.Cells, cell)
	}
	return row
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
// targetContenders with work, in client mode; baseText shows redsync's own
// number in the same case.
func (r *Results) hotTarget(target, scenario string, mode Clients, work time.Duration, baseText func(*HotResult) string, measure hotMeasure, j judge) TargetRow {
	return r.hotTargetAt(target, scenario, mode, targetContenders, work, baseText, measure, j)
}

// hotTargetAt is hotTarget on the case of contenders.
func (r *Results) hotTargetAt(target, scenario string, mode Clients, contenders int, work time.Duration, baseText func(*HotResult) string, measure hotMeasure, j judge) TargetRow {
	row := TargetRow{Target: target, Scenario: scenario, Rule: ruleEvery}
	b := r.hotOf(r.baseline(), mode, contenders, work)
	if b != nil {
		row.Baseline = baseText(b)
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		if h := r.hotOf(lib.ID, mode, contenders, work); h != nil {
			x, text := measure(h, b)
			cell.Value, cell.Verdict = text, j(x)
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// fairTarget judges the fairness mode's max/min grants per client on the
// fairness case. Without a fairness mode among the libraries it shows the
// default mode's, for reference, and judges nothing.
func (r *Results) fairTarget() TargetRow {
	cfg := &r.Config
	row := TargetRow{
		Target: fmt.Sprintf("fair mode: max/min grants per client ≤ %s over a %v run", trimFloat(targetFairness), targetFairRunTime),
		Scenario: fmt.Sprintf("fairness case: %d contenders %s, 0 ms of work, one %v run",
			cfg.FairContenders, ClientPerContender.phrase(), cfg.FairDuration),
		Rule: ruleEvery,
	}
	if b := r.fairOf(r.baseline()); b != nil {
		row.Baseline = fmtFairness(b.Fairness, b.Starved)
	}
	fair := r.fairBackends()
	if len(fair) == 0 {
		row.Scenario += ", default mode for reference"
		row.Note = "the library has no fairness mode yet, so the target cannot be judged; the cells show the default mode in the same case"
		for _, lib := range r.backends() {
			cell := TargetCell{Lib: lib.ID, Value: missing}
			if h := r.fairOf(lib.ID); h != nil {
				cell.Value = fmtFairness(h.Fairness, h.Starved)
			}
			row.Cells = append(row.Cells, cell)
		}
		return row
	}
	row.Scenario += ", redlock+BACKEND " + fair[0].Mode
	if cfg.FairDuration < targetFairRunTime {
		row.Note = fmt.Sprintf("judged on a %v run, shorter than the %v the target names", cfg.FairDuration, targetFairRunTime)
	}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		for _, f := range fair {
			if h := r.fairOf(f.ID); f.Backend == lib.Backend && h != nil {
				cell.Value, cell.Verdict = fmtFairness(h.Fairness, h.Starved), lessEq(targetFairness)(h.Fairness)
			}
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}

// uncontendedTarget judges the ratio of cycles/s over redsync's with g
// goroutines, for a target the issue states for load.
func (r *Results) uncontendedTarget(load string, g int, factor float64, rule string) TargetRow {
	row := TargetRow{
		Target:   fmt.Sprintf("uncontended, %s: ≥ %s× redsync's cycles/s", load, trimFloat(factor)),
		Scenario: fmt.Sprintf("uncontended, %s on keys of their own", goroutines(g)),
		Rule:     rule,
	}
	only, isOnly := strings.CutPrefix(rule, ruleOnly)
	switch {
	case rule == ruleBest:
		row.Target += " on the best backend"
	case isOnly:
		row.Target = fmt.Sprintf("uncontended, %s: redlock+%s ≥ %s× redsync's cycles/s", load, only, trimFloat(factor))
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
			if isOnly && lib.Backend != only {
				cell.Verdict = NotMeasured // shown, not judged
			}
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
	case strings.HasPrefix(rule, ruleOnly), rule == ruleMeasured:
		return verdict(miss == 0)
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

// backends returns redlock over each backend in the default mode: the
// libraries the targets are judged on, but for fairness.
func (r *Results) backends() []Library {
	var out []Library
	for _, l := range r.Libraries {
		if !l.Baseline && !l.Fair {
			out = append(out, l)
		}
	}
	return out
}

// fairBackends returns redlock over each backend in the fairness mode.
func (r *Results) fairBackends() []Library {
	var out []Library
	for _, l := range r.Libraries {
		if l.Fair {
			out = append(out, l)
		}
	}
	return out
}

func (r *Results) hotOf(lib string, mode Clients, contenders int, work time.Duration) *HotResult {
	for i := range r.Hot {
		if h := &r.Hot[i]; h.Lib == lib && h.Clients == mode && h.Contenders == contenders && h.Work == work {
			return h
		}
	}
	return nil
}

// fairOf returns lib's result in the fairness case.
func (r *Results) fairOf(lib string) *HotResult {
	for i := range r.Fair {
		if h := &r.Fair[i]; h.Lib == lib {
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
