package bench

import (
	"fmt"
	"strings"
)

// The overload issue's targets on the held-locks cases, judged on each
// case of each backend that ran: every admitted lock kept and the rest
// refused with ErrOverloaded, at most one Warn line per node a second, and
// no Warn line from a Close with the locks held.
const heldWarnPerNodeSecond = 1

// heldCheck judges one held-locks case against a target: whether it was
// judged, whether it met the target, and its number as the cell shows it.
type heldCheck func(h *HeldResult) (judged, ok bool, text string)

// heldTargets judges the overload issue's targets on the held-locks cases.
func (r *Results) heldTargets() []TargetRow {
	kept := func(h *HeldResult) (bool, bool, string) {
		text := fmt.Sprintf("%s lost of %s admitted, %s refused", groupThousands(int64(h.Lost)), groupThousands(int64(h.Taken)), groupThousands(int64(h.Refused)))
		if h.Failed > 0 {
			text += fmt.Sprintf(", %s failed otherwise", groupThousands(int64(h.Failed)))
		}
		return true, h.Lost == 0 && h.Failed == 0, text
	}
	warn := func(h *HeldResult) (bool, bool, string) {
		return true, h.WarnPerNodeSecond <= heldWarnPerNodeSecond, fmt.Sprintf("%d/node·s (%s lines)", h.WarnPerNodeSecond, groupThousands(int64(h.Warn)))
	}
	closeWarn := func(h *HeldResult) (bool, bool, string) {
		if !h.Closed {
			return false, false, ""
		}
		return true, h.CloseWarn == 0, fmt.Sprintf("%d lines", h.CloseWarn)
	}
	return []TargetRow{
		r.heldTarget("every admitted auto-extended lock kept (0 lost), the rest refused with ErrOverloaded", kept),
		r.heldTarget(fmt.Sprintf("≤ %d Warn line per node per second", heldWarnPerNodeSecond), warn),
		r.heldTarget("Close() with the locks held: 0 Warn lines", closeWarn),
	}
}

// heldScenario names the held-locks cases a target is judged on.
func (r *Results) heldScenario() string {
	cfg := &r.Config
	sizes := make([]string, len(cfg.HeldLocks))
	for i, n := range cfg.HeldLocks {
		sizes[i] = groupThousands(int64(n))
	}
	return fmt.Sprintf("held locks: %s auto-extended locks asked of one Manager, TTL %v, %d nodes", strings.Join(sizes, ", "), cfg.HeldTTL, r.Nodes)
}

// heldTarget judges a target on every held-locks case of each backend;
// a backend with no such case is not measured.
func (r *Results) heldTarget(target string, check heldCheck) TargetRow {
	row := TargetRow{Target: target, Scenario: r.heldScenario(), Rule: ruleMeasured}
	for _, lib := range r.backends() {
		cell := TargetCell{Lib: lib.ID, Value: missing}
		var parts []string
		judged, missed := 0, 0
		for i := range r.Held {
			h := &r.Held[i]
			if h.Lib != lib.ID && h.Lib != lib.Backend {
				continue
			}
			j, ok, text := check(h)
			if !j {
				continue
			}
			judged++
			if !ok {
				missed++
				text += "*"
			}
			parts = append(parts, groupThousands(int64(h.Locks))+": "+text)
		}
		if judged > 0 {
			cell.Value, cell.Verdict = strings.Join(parts, "; "), verdict(missed == 0)
		}
		row.Cells = append(row.Cells, cell)
	}
	row.Overall = combine(row.Rule, row.Cells)
	return row
}
