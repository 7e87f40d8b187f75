package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// A ProcCase is a hot-key case with a process per contender: Contenders
// processes, each with a client of its own, Runs times over.
type ProcCase struct {
	Contenders int
	Runs       int
}

// String is the case as the command line takes it: "64x5".
func (c ProcCase) String() string { return fmt.Sprintf("%dx%d", c.Contenders, c.Runs) }

// procCaseName is the name of a process case of one library.
func procCaseName(contenders int, work time.Duration, lib string) string {
	return fmt.Sprintf("hotkey/procs/c%d-w%v/%s", contenders, work, lib)
}

// procAcc accumulates a library's runs of one process case.
type procAcc struct {
	rounds   []hotRound
	cpu      time.Duration
	commands map[string]int64
	uncount  bool // a run whose servers did not tell: no counts for the case
}

// procCases runs the hot-key cases with a process per contender: for each
// of ProcCases, every selected library in turns, each turn opening the
// library in that many processes and running each selected work time
// once, the turns repeated as the case says. The servers' commands and CPU
// time are counted over each measured run.
func (s *suite) procCases(ctx context.Context, res *Results) error {
	cfg := &s.cfg
	if len(cfg.ProcCases) == 0 {
		return nil
	}
	if len(cfg.ContenderCmd) == 0 {
		s.logf("hotkey/procs: skipped: no contender command")
		return nil
	}
	pool, err := newProcPool(cfg.ContenderCmd)
	if err != nil {
		return err
	}
	defer func() {
		// The runs are measured by now: a process that failed on its way
		// out is reported, not the run.
		if err := pool.stop(); err != nil {
			s.logf("hotkey/procs: %v", err)
		}
	}()
	for _, pc := range cfg.ProcCases {
		c := pc.Contenders
		var ran []Library
		works := map[string][]time.Duration{}
		accs := map[string]map[time.Duration]*procAcc{}
		for _, lib := range res.Libraries {
			for _, w := range cfg.Works {
				if s.selected(procCaseName(c, w, lib.ID)) {
					works[lib.ID] = append(works[lib.ID], w)
				}
			}
			if len(works[lib.ID]) > 0 {
				ran = append(ran, lib)
				accs[lib.ID] = map[time.Duration]*procAcc{}
				for _, w := range works[lib.ID] {
					accs[lib.ID][w] = &procAcc{commands: map[string]int64{}}
				}
			}
		}
		for round := range max(pc.Runs, 1) {
			for i := range ran {
				lib := ran[(round+i)%len(ran)]
				if err := s.procTurn(ctx, pool, lib, c, works[lib.ID], round, accs[lib.ID]); err != nil {
					return fmt.Errorf("hotkey/procs/c%d/%s, run %d: %w", c, lib.ID, round+1, err)
				}
			}
		}
		for _, w := range cfg.Works {
			for _, lib := range ran {
				acc := accs[lib.ID][w]
				if acc == nil {
					continue
				}
				r := analyzeHot(acc.rounds, ProcessPerContender, c, w)
				r.Lib = lib.ID
				if !acc.uncount {
					r.Commands, r.ServerCPU = acc.commands, acc.cpu
				}
				res.Hot = append(res.Hot, r)
				s.logf("%s: %v; %s %s", procCaseName(c, w, lib.ID), &r, r.procSummary(), r.FirstError)
				if r.Handoffs > 0 && len(r.Commands) > 0 {
					s.logf("%s: commands per hand-off: %s", procCaseName(c, w, lib.ID), commandsPer(r.Commands, r.Handoffs))
				}
			}
		}
	}
	return nil
}

// procTurn is one turn of a library in the process case of c contenders:
// c processes open it (each a client of its own), run a warm-up run on a
// key of its own, then a measured run of each work time, each counted on
// the servers, and close it.
func (s *suite) procTurn(ctx context.Context, pool *procPool, lib Library, c int, works []time.Duration, round int, accs map[time.Duration]*procAcc) error {
	cfg := &s.cfg
	t0 := time.Now()
	started := len(pool.procs)
	if err := pool.openLib(ctx, lib, c, openJob{Addrs: s.addrs, TTL: cfg.TTL, NodeTimeout: cfg.NodeTimeout, Tries: cfg.Tries()}); err != nil {
		return err
	}
	t1 := time.Now()
	key := fmt.Sprintf("hotkey/procs/c%d/%s/r%d", c, lib.ID, round)
	// Untimed turns on another key first, as in the in-process cases, so
	// that every process has its connections and subscriptions in place.
	if cfg.HotWarmup > 0 {
		if _, err := pool.run(ctx, key+"/warmup", works[0], cfg.HotWarmup); err != nil {
			return err
		}
	}
	for _, w := range works {
		runtime.GC() // not during the run: the harness shares the CPUs
		before := sampleServers(ctx, s.addrs)
		r, err := pool.run(ctx, fmt.Sprintf("%s/w%v", key, w), w, cfg.ProcRun)
		if err != nil {
			return err
		}
		acc := accs[w]
		acc.rounds = append(acc.rounds, r)
		after := sampleServers(ctx, s.addrs)
		cpu, commands, ok := after.since(before)
		if !ok {
			s.logf("hotkey/procs/c%d-w%v/%s, run %d: the servers' commands and CPU time are not counted: %v", c, w, lib.ID, round+1, cmp.Or(before.err, after.err))
			acc.uncount = true
			continue
		}
		acc.cpu += cpu
		for name, n := range commands {
			acc.commands[name] += n
		}
	}
	t2 := time.Now()
	if err := pool.closeLib(ctx); err != nil {
		return err
	}
	s.logf("hotkey/procs/c%d/%s, run %d: %d processes started and the library opened in %v, warm-up and runs %v, closed in %v",
		c, lib.ID, round+1, len(pool.procs)-started, t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), time.Since(t2).Round(time.Millisecond))
	return nil
}

// procSummary is the progress log's account of what only the process
// cases measure.
func (r *HotResult) procSummary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runs %s grants/s", fmtRuns(r.Runs, r.Collapsed()))
	if cmds := r.CommandsPerHandoff(); !math.IsNaN(cmds) {
		fmt.Fprintf(&b, ", %s commands/hand-off (%s)", trimFloat(cmds), topCommands(r.Commands, 4))
	}
	if cpu := r.ServerCPUPerHandoff(); cpu > 0 {
		fmt.Fprintf(&b, ", servers' CPU %s/hand-off", fmtDur(cpu))
	}
	fmt.Fprintf(&b, ", marker %d of %d grants overlapped, clock ±%s, start lag %s", r.MarkerViolations, r.MarkerChecked, fmtDur(r.ClockError), fmtDur(r.StartLag))
	return b.String()
}

// fmtRuns lists the rates of a case's runs, marking those that collapsed
// with an asterisk: "412, 398, 3*, 420, 405".
func fmtRuns(runs []float64, collapsed []int) string {
	parts := make([]string, len(runs))
	for i, x := range runs {
		parts[i] = fmtRate(x)
		if slices.Contains(collapsed, i) {
			parts[i] += "*"
		}
	}
	return strings.Join(parts, ", ")
}

// topCommands names the n commands processed most, with their shares:
// "evalsha 61%, publish 20%, set 12%, ping 4%".
func topCommands(commands map[string]int64, n int) string {
	total := sumCommands(commands)
	if total == 0 {
		return "none"
	}
	names := slices.SortedFunc(maps.Keys(commands), func(a, b string) int {
		return cmp.Or(cmp.Compare(commands[b], commands[a]), cmp.Compare(a, b))
	})
	var parts []string
	for _, name := range names[:min(n, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", name, 100*float64(commands[name])/float64(total)))
	}
	return strings.Join(parts, ", ")
}
