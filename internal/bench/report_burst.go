package bench

import (
	"fmt"
	"math"
	"strings"
)

// writeBurst writes the cold-burst cases: how they run, and a table per
// number of processes.
func writeBurst(b *strings.Builder, r *Results) {
	cfg := &r.Config
	if len(cfg.Bursts) == 0 || len(r.Burst) == 0 {
		return
	}
	fmt.Fprintf(b, "### A cold burst\n\n")
	fmt.Fprintf(b, "Many programs started at once on one lock: for each run of each library the harness starts that many copies of itself (`GOMAXPROCS=%s` each), which make no connection until a start instant on the shared clock, a little after the last of them has started (the start barrier). At that instant every process opens the library — its own `dlm.Manager` with the default options but a TTL of %v, its own `redsync.Redsync` over go-redis clients of its own — and at once, with no warm-up, calls Lock on one key, holds it %s with its critical section marked on the counter in shared memory, unlocks it and calls Lock again, until the run's %v end. The processes then close the library and exit; the next run starts processes afresh. redlock over each backend in its default mode and redsync take turns, run by run.\n\n",
		contenderGOMAXPROCS, cfg.BurstTTL, fmtWork(cfg.BurstWork), cfg.BurstRun)
	b.WriteString("- **grants/s** of each run, and **vs redsync** that of redsync's run of the same round, run by run. **Longest without a grant** is the longest stretch of each run with no Lock returning the lock, the run's start and end included: a stale key or a herd of waiters shows there. **Served** is the share of the processes granted the lock at least once, the lowest of the runs.\n")
	b.WriteString("- **Overlaps** are two holders at once, found in the merged calls or on the shared counter, over all the runs; they must be 0. **Connections/process** is the connections a node accepted over a run (INFO stats `total_connections_received`, from before the processes start to after they exit, the harness's own left out) over the processes, on the busiest node, the most of the runs; **most clients** the most clients connected to one node at once (INFO clients, sampled every ")
	fmt.Fprintf(b, "%v during each run; a node too busy to answer within %v goes unsampled until it answers again). **Keys left** counts the keys of the run's lock left on the nodes once every process has exited, over all the runs, with the longest time to live among them: a key left behind blocks the lock until it expires.\n\n", burstPollEvery, probeTimeoutEach)
	base := r.baseline()
	libs := r.backends()
	for _, lib := range r.Libraries {
		if lib.Baseline {
			libs = append(libs, lib)
		}
	}
	for _, bc := range cfg.Bursts {
		n := bc.Contenders
		fmt.Fprintf(b, "#### %d processes at once\n\n", n)
		bh := r.burstOf(base, n)
		t := newTable(b, "l", "library", "grants/s of each run", "vs redsync", "longest without a grant", "served", "overlaps", "connections/process", "most clients", "keys left", "late start", "errors")
		for _, lib := range libs {
			h := r.burstOf(lib.ID, n)
			if h == nil || len(h.Runs) == 0 {
				t.row(lib.Name, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing)
				continue
			}
			rates, vs, stalls := make([]string, len(h.Runs)), make([]string, len(h.Runs)), make([]string, len(h.Runs))
			served, conns := math.Inf(1), math.NaN()
			var overlaps, keys, errs int
			var most int64 = -1
			var first string
			keysCounted := true
			lag, ttl := h.Runs[0].StartLag, h.Runs[0].LeftTTL
			for i := range h.Runs {
				run := &h.Runs[i]
				rates[i], stalls[i], vs[i] = fmtRate(run.GrantsPerSec()), fmtDur(run.Stall), missing
				if bh != nil && i < len(bh.Runs) {
					vs[i] = fmtRatio(Ratio(run.GrantsPerSec(), bh.Runs[i].GrantsPerSec()))
				}
				served = min(served, run.ServedShare())
				if c := run.ConnsPerProcess(); !math.IsNaN(c) && (math.IsNaN(conns) || c > conns) {
					conns = c
				}
				most = max(most, run.MostClients)
				overlaps += run.Overlaps()
				if run.KeysLeft < 0 {
					keysCounted = false
				}
				keys += max(run.KeysLeft, 0)
				lag, ttl = max(lag, run.StartLag), max(ttl, run.LeftTTL)
				if errs += run.Errors; first == "" {
					first = run.FirstError
				}
			}
			mostText, keysText := missing, missing
			if most >= 0 {
				mostText = fmt.Sprint(most)
			}
			if keysCounted {
				keysText = fmt.Sprint(keys)
				if keys > 0 {
					keysText += " (TTL up to " + fmtDur(ttl) + ")"
				}
			}
			overlapText := fmt.Sprint(overlaps)
			if overlaps > 0 {
				overlapText = "**" + overlapText + "**"
			}
			t.row(lib.Name, strings.Join(rates, ", "), strings.Join(vs, ", "), strings.Join(stalls, ", "),
				fmtPercent(served), overlapText, fmtConns(conns), mostText, keysText, fmtDur(lag), errorsCell(errs, first))
		}
		b.WriteString("\n")
	}
}
