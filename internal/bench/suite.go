package bench

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// Config sets what a run measures and for how long.
type Config struct {
	TTL         time.Duration // of every lock, for every library
	Duration    time.Duration // of each uncontended, latency and physical case
	HotDuration time.Duration // of each hot-key case
	HotWarmup   time.Duration // untimed run on another key before each round of a hot-key case
	Goroutines  []int         // uncontended cases
	// NodeTimeout bounds each request to one node, for every library; 0,
	// the default and what make bench measures, leaves each library its
	// own: redlock derives it from the TTL (250 ms for 8 s), redsync bounds
	// an acquire by 5% of the expiry and a release by go-redis' read
	// timeout (3 s).
	NodeTimeout time.Duration
	// SharedGoroutines are the goroutines of the lease cases (redlock's
	// read lock and semaphore, uncontended); none skips them.
	SharedGoroutines []int
	SemLimit         int             // limit of the lease cases' semaphores
	Contenders       []int           // hot-key cases, each run with a shared client and with a client per contender
	Works            []time.Duration // time held per grant in the hot-key cases
	LatencyGap       time.Duration   // pause between cycles at low load
	AllocCycles      int             // cycles counted for allocations
	PhysConns        int             // connections per node for the physical limit
	PhysBatch        int             // pairs per pipelined round trip
	// Rounds splits each uncontended, hot-key and latency case into this
	// many runs of an equal share of its length, the libraries taking
	// turns in a different order each round, so that a change in the
	// machine's load does not fall on one library.
	Rounds int
	// FairDuration is the length of the fairness case, FairContenders
	// contenders with a client each and no work, run in one piece rather
	// than in rounds, so that its max/min is that of one run; 0 skips it.
	FairDuration   time.Duration
	FairContenders int
	// ProcCases are the hot-key cases with a process per contender
	// ("hotkey/procs/cN-wWORK/LIB"), each run with every one of Works:
	// how many contenders, and how many runs of ProcRun, the libraries
	// taking turns; none skips them, as does an empty ContenderCmd. The
	// no-collapse check compares the runs of a case.
	ProcCases []ProcCase
	ProcRun   time.Duration
	// Bursts are the cold-burst cases ("burst/nN/LIB", burst.go), each
	// of Contenders processes started for each of Runs runs of BurstRun,
	// redlock over each backend in its default mode and redsync taking
	// turns: at one start instant every process opens the library with
	// no warm-up, a TTL of BurstTTL, and at once contends for one key,
	// holding it BurstWork per grant. None skips them, as does an empty
	// ContenderCmd.
	Bursts    []ProcCase
	BurstRun  time.Duration
	BurstTTL  time.Duration
	BurstWork time.Duration
	// ContenderCmd is the command line that starts a contender process: a
	// program that runs ContenderMain when IsContender, as lockbench does.
	// Empty skips the process cases.
	ContenderCmd []string
	// Run, when set, selects the cases whose names it matches, as
	// "uncontended/g1/goredis", "read/g64/redigo", "semaphore/g1/rueidis",
	// "hotkey/shared/c8-w0s/redsync", "hotkey/per-contender/c64-w1ms/rueidis",
	// "hotkey/procs/c256-w0s/goredis-fair",
	// "fairness/c8-w0s/goredis", "latency/rueidis", "allocs/redigo",
	// "allocs-read/goredis", "allocs-semaphore/goredis" or "physical".
	Run *regexp.Regexp
	Log io.Writer // progress, one line per case
	// HeldLocks are the sizes of the held-locks cases
	// ("held/nN/BACKEND"): one Manager takes that many locks with
	// TryLock and WithAutoExtend, of TTL HeldTTL, at HeldRate a second
	// (0: as fast as 64 goroutines can), and holds them for HeldDuration,
	// through each of HeldBackends; none skips them. With HeldClose each
	// case ends with the Manager's Close, the locks still held, rather
	// than with an Unlock of each.
	HeldLocks    []int
	HeldTTL      time.Duration
	HeldRate     int
	HeldDuration time.Duration
	HeldBackends []string
	HeldClose    bool
}

// DefaultConfig is the configuration of `make bench`.
func DefaultConfig() Config {
	return Config{
		TTL:         8 * time.Second,
		Duration:    3 * time.Second,
		HotDuration: 6 * time.Second,
		HotWarmup:   250 * time.Millisecond,
		Goroutines:  []int{1, 8, 64},
		// The semaphore cycles beside the mutex's: L=2 needs 4 of
		// the 5 nodes, a case a majority does not cover.
		SharedGoroutines: []int{1, 64},
		SemLimit:         2,
		Contenders:       []int{8, 64},
		Works:            []time.Duration{0, time.Millisecond},
		// The contention issue's sizes, and its no-collapse check: five
		// runs of 64 contenders. One run of 256 processes: they take
		// seconds to open a library, and give many samples per run.
		ProcCases: []ProcCase{{8, 3}, {64, 5}, {256, 1}},
		ProcRun:   1500 * time.Millisecond,
		// The burst issue's sizes, runs and length, with redlock's
		// default TTL.
		Bursts:    []ProcCase{{256, 5}, {64, 5}},
		BurstRun:  10 * time.Second,
		BurstTTL:  dlm.DefaultTTL,
		BurstWork: time.Millisecond,
		// The fairness target: 8 contenders over a 10 s run.
		FairDuration:   10 * time.Second,
		FairContenders: 8,
		LatencyGap:     2 * time.Millisecond,
		AllocCycles:    2000,
		PhysConns:      2,
		PhysBatch:      64,
		Rounds:         3,
		Log:            io.Discard,
		// The capacity issue's sizes and TTL.
		HeldLocks: []int{10_000, 50_000, 200_000},
		HeldTTL:   3 * time.Second,
		// Taking a lock costs the process and the servers many times
		// what holding it does: on two cores, taking them as fast as
		// possible leaves too little to extend those already held.
		HeldRate:     2000,
		HeldDuration: 30 * time.Second,
		HeldBackends: []string{"goredis"},
	}
}

// redsyncMinDelay is redsync's shortest default wait between tries.
const redsyncMinDelay = 50 * time.Millisecond

// Tries is the number of tries given to libraries that count them: enough
// that a waiter retrying at redsync's shortest delay keeps trying for the
// longest case, so contention never makes a Lock fail.
func (c *Config) Tries() int {
	longest := max(c.Duration, c.HotDuration, c.FairDuration, c.BurstRun)
	return int(longest/redsyncMinDelay) + 32
}

// Results is everything a run measured.
type Results struct {
	Config      Config
	Machine     Machine
	Nodes       int
	Libraries   []Library
	Physical    *PhysicalResult
	Uncontended []UncontendedResult
	// Shared and SharedAllocs are the lease cases: redlock's read lock and
	// semaphore, uncontended.
	Shared       []SharedResult
	SharedAllocs []SharedAllocResult
	Hot          []HotResult // both client modes
	Fair         []HotResult // the fairness case
	Latency      []LatencyResult
	Allocs       []AllocResult
	Held         []HeldResult
	Burst        []BurstResult // the cold-burst cases
	Elapsed      time.Duration
}

// Run measures every selected case against the nodes at addrs, the
// libraries side by side: each case runs for every library, in rounds (the
// fairness case in one), before the next case starts. It stops at the
// first error opening a library, or when ctx ends.
func Run(ctx context.Context, cfg Config, addrs []string, redisVersion string) (*Results, error) {
	start := time.Now()
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	cfg.Rounds = max(cfg.Rounds, 1)
	res := &Results{Config: cfg, Machine: DescribeMachine(redisVersion), Nodes: len(addrs), Libraries: Libraries()}
	s := &suite{cfg: cfg, addrs: addrs, lockers: map[string]Locker{}, own: map[string][]Locker{}}
	defer s.close()
	share := func(d time.Duration) time.Duration { return d / time.Duration(cfg.Rounds) }

	if s.selected("physical") {
		r, err := runPhysical(ctx, addrs, cfg.PhysConns, cfg.PhysBatch, cfg.TTL, cfg.Duration)
		if err != nil {
			return nil, fmt.Errorf("physical limit: %w", err)
		}
		res.Physical = &r
		s.logf("physical: %.0f cycles/s (%.0f commands/s over %d nodes)", r.CyclesPerSec(), r.CommandsPerSec(), r.Nodes)
	}
	// The bare floor, and redlock with fencing and with the restart
	// guard, take their turns with the libraries in the uncontended cases:
	// the cost of a cycle with no library in between, and of each feature.
	withFloor := slices.Concat(res.Libraries, CostLibraries(), []Library{FloorLibrary()})
	for _, g := range cfg.Goroutines {
		acc := map[string]*UncontendedResult{}
		ran, err := s.rounds(ctx, withFloor, fmt.Sprintf("uncontended/g%d", g), cfg.Rounds, func(lib Library, lk Locker, name string, round int) error {
			scpu := serversCPU(ctx, addrs)
			r, err := runUncontended(ctx, lk, fmt.Sprintf("%s/r%d", name, round), g, share(cfg.Duration))
			if after := serversCPU(ctx, addrs); scpu > 0 && after > scpu {
				r.ServerCPU = after - scpu
			}
			if acc[lib.ID] == nil {
				acc[lib.ID] = &UncontendedResult{Lib: lib.ID, Goroutines: g}
			}
			acc[lib.ID].add(r)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, lib := range ran {
			r := acc[lib.ID]
			res.Uncontended = append(res.Uncontended, *r)
			s.logf("uncontended/g%d/%s: %.0f cycles/s, CPU per cycle %v client, %v servers, errors %d %s", g, lib.ID, r.PerSec(), r.CPUPerCycle(), r.ServerCPUPerCycle(), r.Errors, r.FirstError)
		}
	}
	if len(cfg.SharedGoroutines) > 0 {
		if err := s.sharedCases(ctx, res); err != nil {
			return nil, err
		}
	}
	for _, mode := range ClientModes {
		for _, c := range cfg.Contenders {
			for _, w := range cfg.Works {
				prefix := fmt.Sprintf("hotkey/%v/c%d-w%v", mode, c, w)
				hot, err := s.hotCase(ctx, res.Libraries, prefix, mode, c, w, cfg.HotDuration, cfg.Rounds)
				if err != nil {
					return nil, err
				}
				res.Hot = append(res.Hot, hot...)
			}
		}
	}
	// The contenders' own clients are closed after the cases that need
	// them, so that those of the largest case do not linger, idle, while
	// the process cases, the fairness case, the latency and the
	// allocations are measured.
	s.closeOwn()
	if err := s.procCases(ctx, res); err != nil {
		return nil, err
	}
	if err := s.burstCases(ctx, res); err != nil {
		return nil, err
	}
	if cfg.FairDuration > 0 && cfg.FairContenders > 0 {
		prefix := fmt.Sprintf("fairness/c%d-w0s", cfg.FairContenders)
		fair, err := s.hotCase(ctx, res.Libraries, prefix, ClientPerContender, cfg.FairContenders, 0, cfg.FairDuration, 1)
		if err != nil {
			return nil, err
		}
		res.Fair = fair
	}
	s.closeOwn()
	lat := map[string]*LatencyResult{}
	ran, err := s.rounds(ctx, res.Libraries, "latency", cfg.Rounds, func(lib Library, lk Locker, name string, round int) error {
		if lat[lib.ID] == nil {
			lat[lib.ID] = &LatencyResult{Lib: lib.ID}
		}
		return runLatency(ctx, lk, fmt.Sprintf("%s/r%d", name, round), share(cfg.Duration), cfg.LatencyGap, lat[lib.ID])
	})
	if err != nil {
		return nil, err
	}
	for _, lib := range ran {
		r := lat[lib.ID]
		r.summarize()
		res.Latency = append(res.Latency, *r)
		s.logf("latency/%s: acquire p50 %v p99 %v, release p50 %v p99 %v, errors %d %s",
			lib.ID, r.Acquire.P50, r.Acquire.P99, r.Release.P50, r.Release.P99, r.Errors, r.FirstError)
	}
	_, err = s.rounds(ctx, res.Libraries, "allocs", 1, func(lib Library, lk Locker, name string, _ int) error {
		r, err := runAllocs(ctx, lk, name, cfg.AllocCycles)
		r.Lib = lib.ID
		res.Allocs = append(res.Allocs, r)
		s.logf("%s: %.1f allocs, %.0f B per cycle, errors %d", name, r.Allocs, r.Bytes, r.Errors)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Last, with every other library closed: the held-locks cases
	// measure the heap and the CPU of the process.
	s.close()
	if err := s.heldCases(ctx, res); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	res.Machine.LoadEnd = LoadAverage()
	return res, nil
}

// suite holds the libraries opened so far in a run.
type suite struct {
	cfg     Config
	addrs   []string
	lockers map[string]Locker   // by Library.ID
	own     map[string][]Locker // the contenders' own clients, by Library.ID
	logMu   sync.Mutex
}

func (s *suite) selected(name string) bool { return s.cfg.Run == nil || s.cfg.Run.MatchString(name) }

func (s *suite) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.cfg.Log, format+"\n", args...)
}

// rounds runs fn n times for every library whose case, prefix/ID, is
// selected, each time with the library open and warmed up and the heap
// collected. Round r starts with the r-th library and goes round, so that
// no library always runs first or after the same one. It returns the
// libraries that ran, in their order.
func (s *suite) rounds(ctx context.Context, libs []Library, prefix string, n int, fn func(lib Library, lk Locker, name string, round int) error) ([]Library, error) {
	var ran []Library
	for _, lib := range libs {
		if s.selected(prefix + "/" + lib.ID) {
			ran = append(ran, lib)
		}
	}
	for round := range n {
		for i := range ran {
			lib := ran[(round+i)%len(ran)]
			name := prefix + "/" + lib.ID
			lk, err := s.open(ctx, lib)
			if err != nil {
				return nil, err
			}
			runtime.GC()
			if err := fn(lib, lk, name, round); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return ran, nil
}

// warmupCycles are run by a few goroutines when a library is opened, so
// that connections exist and scripts are loaded before anything is timed.
const warmupCycles = 50

// open returns the library's Locker, opening it and warming it up on first
// use.
func (s *suite) open(ctx context.Context, lib Library) (Locker, error) {
	if lk, ok := s.lockers[lib.ID]; ok {
		return lk, nil
	}
	lk, err := lib.Open(s.addrs, s.cfg.TTL, s.cfg.NodeTimeout, s.cfg.Tries())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", lib.Name, err)
	}
	s.lockers[lib.ID] = lk
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := lk.Mutex(fmt.Sprintf("warmup/%s/%d", lib.ID, i))
			for range warmupCycles {
				if errs[i] = m.Lock(ctx); errs[i] != nil {
					return
				}
				if errs[i] = m.Unlock(ctx); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("warming up %s: %w", lib.Name, err)
		}
	}
	return lk, nil
}

// hotCase runs one hot-key case, contenders on one key holding it for work
// each time, for every selected library, in rounds of an equal share of
// window. It returns the results in the libraries' order.
func (s *suite) hotCase(ctx context.Context, libs []Library, prefix string, mode Clients, contenders int, work, window time.Duration, rounds int) ([]HotResult, error) {
	acc := map[string][]hotRound{}
	share := window / time.Duration(rounds)
	ran, err := s.rounds(ctx, libs, prefix, rounds, func(lib Library, lk Locker, name string, round int) error {
		clients, err := s.clients(ctx, lib, lk, mode, contenders)
		if err != nil {
			return err
		}
		key := fmt.Sprintf("%s/r%d", name, round)
		// Untimed turns on another key, so that every client has its
		// connections and, where it has them, its subscriptions in place.
		if s.cfg.HotWarmup > 0 {
			if _, err := runHot(ctx, clients, key+"/warmup", work, s.cfg.HotWarmup); err != nil {
				return err
			}
			runtime.GC()
		}
		r, err := runHot(ctx, clients, key, work, share)
		acc[lib.ID] = append(acc[lib.ID], r)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]HotResult, 0, len(ran))
	for _, lib := range ran {
		r := analyzeHot(acc[lib.ID], mode, contenders, work)
		r.Lib = lib.ID
		out = append(out, r)
		s.logf("%s/%s: %v %s", prefix, lib.ID, &r, r.FirstError)
	}
	return out, nil
}

// ownWarmupCycles are run by each contender's own client when it is
// opened; the contended warm-up of each round does the rest.
const ownWarmupCycles = 3

// clients returns the clients of n contenders of lib: lk, the library's
// shared Locker, n times over, or n Lockers of their own, opened on first
// use and kept until closeOwn.
func (s *suite) clients(ctx context.Context, lib Library, lk Locker, mode Clients, n int) ([]Locker, error) {
	if mode == SharedClient {
		out := make([]Locker, n)
		for i := range out {
			out[i] = lk
		}
		return out, nil
	}
	for i := len(s.own[lib.ID]); i < n; i++ {
		own, err := lib.Open(s.addrs, s.cfg.TTL, s.cfg.NodeTimeout, s.cfg.Tries())
		if err != nil {
			return nil, fmt.Errorf("open %s, client %d: %w", lib.Name, i, err)
		}
		s.own[lib.ID] = append(s.own[lib.ID], own)
		m := own.Mutex(fmt.Sprintf("warmup/%s/own%d", lib.ID, i))
		for range ownWarmupCycles {
			err := m.Lock(ctx)
			if err == nil {
				err = m.Unlock(ctx)
			}
			if err != nil {
				return nil, fmt.Errorf("warming up %s, client %d: %w", lib.Name, i, err)
			}
		}
	}
	return s.own[lib.ID][:n], nil
}

// closeOwn closes the contenders' own clients, all at once.
func (s *suite) closeOwn() {
	var wg sync.WaitGroup
	for id, lks := range s.own {
		for _, lk := range lks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lk.Close()
			}()
		}
		delete(s.own, id)
	}
	wg.Wait()
}

// close closes every library opened.
func (s *suite) close() {
	s.closeOwn()
	for id, lk := range s.lockers {
		lk.Close()
		delete(s.lockers, id)
	}
}

// heldCases runs the selected held-locks cases, each on a Manager of its
// own.
func (s *suite) heldCases(ctx context.Context, res *Results) error {
	for _, n := range s.cfg.HeldLocks {
		for _, backend := range s.cfg.HeldBackends {
			name := fmt.Sprintf("held/n%d/%s", n, backend)
			if !s.selected(name) {
				continue
			}
			runtime.GC()
			r, err := runHeld(ctx, backend, s.addrs, name, n, s.cfg.HeldRate, s.cfg.HeldTTL, s.cfg.HeldDuration, s.cfg.NodeTimeout, s.cfg.HeldClose)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			res.Held = append(res.Held, r)
			s.logf("%s: %v", name, &r)
		}
	}
	return nil
}
