package bench

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// procsAnchor is the link to the process cases' part of the report.
const procsAnchor = "#a-process-per-contender"

// procResults returns the results of the process cases.
func (r *Results) procResults() []*HotResult {
	var out []*HotResult
	for i := range r.Hot {
		if h := &r.Hot[i]; h.Clients == ProcessPerContender {
			out = append(out, h)
		}
	}
	return out
}

// procCasesText says how often and how long the process cases run: "3
// runs of 1.5s with 8 contenders, 5 runs of 1.5s with 64 contenders and
// one run of 1.5s with 256 contenders".
func procCasesText(cases []ProcCase, run time.Duration) string {
	parts := make([]string, len(cases))
	for i, pc := range cases {
		if pc.Runs <= 1 {
			parts[i] = fmt.Sprintf("one run of %v with %d contenders", run, pc.Contenders)
		} else {
			parts[i] = fmt.Sprintf("%d runs of %v with %d contenders", pc.Runs, run, pc.Contenders)
		}
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func writeProcs(b *strings.Builder, r *Results) {
	cfg := &r.Config
	if len(cfg.ProcCases) == 0 {
		return
	}
	var clockErr, lag time.Duration
	for _, h := range r.procResults() {
		clockErr, lag = max(clockErr, h.ClockError), max(lag, h.StartLag)
	}
	fmt.Fprintf(b, "### A process per contender\n\n")
	fmt.Fprintf(b, "The same turns with every contender a process of its own, as separate programs on one machine would take them: the harness starts copies of itself (`GOMAXPROCS=%s` each), and each opens the library with a client of its own — its own `dlm.Manager`, its own `redsync.Redsync` over go-redis clients of its own — takes turns on the key, and sends its calls back to the harness, which merges them. The cases are %s, the libraries taking turns; the processes serve one library after the other, each opening it afresh for its turn and warming up with %v of untimed turns on another key before the measured runs, one per work time.\n\n",
		contenderGOMAXPROCS, procCasesText(cfg.ProcCases, cfg.ProcRun), cfg.HotWarmup)
	fmt.Fprintf(b, "- **One time line**: the harness gives each run a start instant on `CLOCK_MONOTONIC`, which every process of the machine reads alike, and each process times its calls from that instant on its own monotonic clock, mapped once onto `CLOCK_MONOTONIC` between two readings of its own; each mapping is off by at most half the gap between them")
	if clockErr > 0 {
		fmt.Fprintf(b, ", and in this run the processes' mappings agreed within ±%s", fmtDur(clockErr))
	}
	fmt.Fprintf(b, ". The run's window is counted from the instant; **late start** is how long after it the last contender began its first Lock (a process woken late on a busy machine, by then in line behind those already contending)")
	if lag > 0 {
		fmt.Fprintf(b, ", %s at most in this run", fmtDur(lag))
	}
	b.WriteString(".\n")
	b.WriteString("- **Two holders at once** are looked for twice, and both counts must be 0: in the merged calls (a grant that returned before an earlier holder called Unlock: a holder's Unlock is timed before its release leaves, the next grant after its reply arrives, so a release and the next grant are at least a round trip apart, far more than the clocks' disagreement), and on a counter in memory the processes share (a holder adds one once Lock has returned and takes it off before it calls Unlock; a grant that finds another holder there). The errors column shows either.\n")
	fmt.Fprintf(b, "- **wait** counts every Lock call here, those still waiting when a run ended with what they had waited by then (a lower bound), so that a contender starved through a run weighs in; no wait can show longer than a run, %v. **commands/hand-off** is the commands the %d servers processed over the measured runs (INFO commandstats: the scripts' own calls included, the harness's INFO left out) over the hand-offs, **server CPU/hand-off** their CPU time (INFO cpu) likewise: what a hand-off costs the servers, whatever the clients do meanwhile.\n\n", cfg.ProcRun, r.Nodes)
	base := r.baseline()
	for _, pc := range cfg.ProcCases {
		for _, w := range cfg.Works {
			fmt.Fprintf(b, "#### %d contenders, a process each, %s of work inside\n\n", pc.Contenders, fmtWork(w))
			bh := r.hotOf(base, ProcessPerContender, pc.Contenders, w)
			t := newTable(b, "l", "library", "grants/s", "vs redsync", "hand-offs/s", "vs redsync", "hand-off", "release → waiter", "wait", "wait max", "max/min", "commands/hand-off", "server CPU/hand-off", "late start", "errors")
			for _, lib := range r.Libraries {
				h := r.hotOf(lib.ID, ProcessPerContender, pc.Contenders, w)
				if h == nil {
					t.row(lib.Name, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing)
					continue
				}
				vsG, vsH := missing, missing
				if bh != nil {
					vsG = fmtRatio(Ratio(h.GrantsPerSec(), bh.GrantsPerSec()))
					vsH = fmtRatio(Ratio(h.HandoffsPerSec(), bh.HandoffsPerSec()))
				}
				_, cmds := serverCommands.perHandoff(h)
				_, cpu := serverCPU.perHandoff(h)
				t.row(lib.Name, fmtRate(h.GrantsPerSec()), vsG, fmtRate(h.HandoffsPerSec()), vsH,
					fmtDist(h.Handoff), fmtDist(h.ToWaiter), fmtDist(h.WaitAll), fmtDur(h.WaitMax),
					fmtFairness(h.Fairness, h.Starved), cmds, cpu, fmtDur(h.StartLag), hotErrors(h))
			}
			b.WriteString("\n")
		}
	}
	writeCollapse(b, r)
	writeFairDefault(b, r)
}

// writeFairDefault compares, case by case of the process cases, redlock's
// default mode with its fair mode over the same backends, and says why the
// default is not the fair mode.
func writeFairDefault(b *strings.Builder, r *Results) {
	cfg := &r.Config
	fair := r.fairBackends()
	if len(cfg.ProcCases) == 0 || len(fair) == 0 {
		return
	}
	fmt.Fprintf(b, "#### Fairness by default?\n\n")
	fmt.Fprintf(b, "Each process case's hand-offs/s, wait p99 and max/min in redlock's default mode and with `%s`, over each backend: the range over the backends.\n\n", fair[0].Options)
	t := newTable(b, "ll", "case", "mode", "hand-offs/s", "wait p99", "max/min")
	for _, pc := range cfg.ProcCases {
		for _, w := range cfg.Works {
			name := fmt.Sprintf("%d processes, %s of work", pc.Contenders, fmtWork(w))
			for _, mode := range []struct {
				label string
				libs  []Library
			}{{"default", r.backends()}, {fair[0].Mode, fair}} {
				var hs []*HotResult
				for _, lib := range mode.libs {
					if h := r.hotOf(lib.ID, ProcessPerContender, pc.Contenders, w); h != nil {
						hs = append(hs, h)
					}
				}
				if len(hs) == 0 {
					continue
				}
				t.row(name, mode.label,
					spanOf(hs, (*HotResult).HandoffsPerSec, func(h *HotResult) string { return fmtRate(h.HandoffsPerSec()) }),
					spanOf(hs, func(h *HotResult) float64 { return float64(h.WaitAll.P99) }, func(h *HotResult) string { return fmtDur(h.WaitAll.P99) }),
					spanOf(hs, fairnessOrder, func(h *HotResult) string { return fmtFairness(h.Fairness, h.Starved) }))
				name = ""
			}
		}
	}
	b.WriteString("\n")
	b.WriteString("The default mode is not made the fair one because under contention it already serves the waiters in order: every node keeps a line of the waiters it refused, ordered by the time each began to wait, and a release hands the key to the head of the line and wakes that waiter alone, so the two modes measure alike here. What `WithFairness` adds is strictness where nobody is handed anything: a free key goes only to the head of its line, never to a caller that arrives while others wait, and the waiters renew their places at least every third of `Fairness.Expiry`. The default keeps what a lock without contention needs: a free key goes to whoever asks, by a plain `SET NX` where the node allows it, with no line written; and a waiter that dies costs the others at most one reservation of two node timeouts, not its place's expiry. Choose `WithFairness` when an arrival must never overtake a waiter; every client of the key must then use it.\n\n")
}

// spanOf formats the range of hs, which is not empty, ordered by key:
// "lo–hi" as format writes them, or one value when they write alike.
func spanOf(hs []*HotResult, key func(*HotResult) float64, format func(*HotResult) string) string {
	lo, hi := hs[0], hs[0]
	for _, h := range hs[1:] {
		if key(h) < key(lo) {
			lo = h
		}
		if key(h) > key(hi) {
			hi = h
		}
	}
	if a, b := format(lo), format(hi); a != b {
		return a + "–" + b
	}
	return format(lo)
}

// fairnessOrder orders max/min ratios, a case without grants (NaN) first.
func fairnessOrder(h *HotResult) float64 {
	if math.IsNaN(h.Fairness) {
		return math.Inf(-1)
	}
	return h.Fairness
}

// writeCollapse lists the grants/s of every run of the process cases that
// ran more than once, marking the collapsed runs.
func writeCollapse(b *strings.Builder, r *Results) {
	cfg := &r.Config
	var cases []ProcCase
	for _, pc := range cfg.ProcCases {
		if pc.Runs > 1 {
			cases = append(cases, pc)
		}
	}
	if len(cases) == 0 {
		return
	}
	fmt.Fprintf(b, "#### No collapse: grants/s of each run\n\n")
	fmt.Fprintf(b, "The process cases' grants/s run by run, in the order they ran. An asterisk marks a run **below half the median** of the case's runs, or with no grant at all: a run in which the lock collapsed, passing far fewer grants than it does otherwise.\n\n")
	t := newTable(b, "ll", "library", "case", "grants/s of each run", "median", "collapsed runs")
	for _, pc := range cases {
		for _, w := range cfg.Works {
			name := fmt.Sprintf("%d contenders, %s of work", pc.Contenders, fmtWork(w))
			for _, lib := range r.Libraries {
				h := r.hotOf(lib.ID, ProcessPerContender, pc.Contenders, w)
				if h == nil || len(h.Runs) == 0 {
					t.row(lib.Name, name, missing, missing, missing)
					continue
				}
				c := h.Collapsed()
				collapsed := fmt.Sprintf("%d of %d", len(c), len(h.Runs))
				if len(c) > 0 {
					collapsed = "**" + collapsed + "**"
				}
				med := Median(h.Runs)
				if math.IsNaN(med) {
					med = 0
				}
				t.row(lib.Name, name, fmtRuns(h.Runs, c), fmtRate(med), collapsed)
			}
		}
	}
	b.WriteString("\n")
}
