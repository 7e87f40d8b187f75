// Command lockbench runs redlock's side-by-side benchmark: it starts five
// redis-server processes on loopback ports, measures redlock over each
// backend and redsync v4 on them in one run, and writes benchmarks.md and
// benchmarks.svg into the -out directory. It stops its servers on exit,
// on error and on Ctrl-C.
//
//	lockbench -out docs                 # what `make bench` runs
//	lockbench -run 'uncontended/g1/goredis' -cpuprofile cpu.out
//	lockbench -run '^(read|semaphore)/'
//	lockbench -run 'hotkey/procs/' -proc-cases 8x1,64x1   # the process cases at 8 and 64, quickly
//	lockbench -run '^burst/' -burst 64x1,256x1           # the cold burst alone, one run of each size
//	lockbench -run '^held/' -held 20000 -held-duration 20s # one held-locks case
//	lockbench -run '^held/' -held 100000 -held-close       # one held-locks case ended by Close
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dlmgo/redlock/internal/bench"
)

func main() {
	// The process cases start copies of lockbench as their contenders.
	if bench.IsContender() {
		os.Exit(bench.ContenderMain())
	}
	os.Exit(run())
}

func run() int {
	cfg := bench.DefaultConfig()
	var (
		out         = flag.String("out", "", "directory to write benchmarks.md and benchmarks.svg into (none: print the report)")
		nodes       = flag.Int("nodes", 5, "redis-server processes to start")
		redisServer = flag.String("redis-server", "", "redis-server binary (default: $REDIS_SERVER, else from PATH)")
		runPattern  = flag.String("run", "", "run only the cases whose names match this regular expression, as physical, uncontended/g1/goredis, read/g64/redigo, semaphore/g1/rueidis, hotkey/shared/c8-w1ms/redsync, hotkey/per-contender/c64-w0s/rueidis, hotkey/procs/c256-w1ms/goredis-fair, burst/n256/redsync, fairness/c8-w0s/goredis, latency/rueidis, allocs/redigo, allocs-semaphore/goredis, held/n200000/goredis")
		cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile of the measured cases to this file")
		memProfile  = flag.String("memprofile", "", "write an allocation profile of the measured cases to this file")
		memRate     = flag.Int("memprofilerate", 0, "with -memprofile, sample one allocation per this many bytes (1: every allocation; 0: Go's default)")
	)
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each uncontended, latency and physical-limit case")
	flag.DurationVar(&cfg.HotDuration, "hot-duration", cfg.HotDuration, "length of each hot-key case")
	flag.DurationVar(&cfg.HotWarmup, "hot-warmup", cfg.HotWarmup, "untimed turns on another key before each round of a hot-key case")
	flag.DurationVar(&cfg.FairDuration, "fair-duration", cfg.FairDuration, "length of the fairness case, run in one piece (0: skip it)")
	flag.DurationVar(&cfg.TTL, "ttl", cfg.TTL, "TTL of every lock, for every library")
	flag.DurationVar(&cfg.NodeTimeout, "node-timeout", cfg.NodeTimeout, "bound of each request to one node, for every library (0: each library's default)")
	flag.Func("goroutines", fmt.Sprintf("goroutines of the uncontended cases, comma-separated (default %s)", joinInts(cfg.Goroutines)), func(v string) error {
		n, err := parseInts(v)
		cfg.Goroutines = n
		return err
	})
	flag.Func("shared-goroutines", fmt.Sprintf("goroutines of the read lock and semaphore cases, comma-separated (default %s)", joinInts(cfg.SharedGoroutines)), func(v string) error {
		n, err := parseInts(v)
		cfg.SharedGoroutines = n
		return err
	})
	flag.IntVar(&cfg.SemLimit, "sem-limit", cfg.SemLimit, "limit of the semaphore cases' semaphores")
	flag.Func("contenders", fmt.Sprintf("contenders of the hot-key cases, comma-separated (default %s)", joinInts(cfg.Contenders)), func(v string) error {
		n, err := parseInts(v)
		cfg.Contenders = n
		return err
	})
	flag.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "runs each case is split into, the libraries taking turns in a different order each round")
	flag.Func("proc-cases", fmt.Sprintf("hot-key cases with a process per contender, comma-separated CONTENDERSxRUNS (default %s)", joinProcCases(cfg.ProcCases)), func(v string) error {
		pc, err := parseProcCases(v)
		cfg.ProcCases = pc
		return err
	})
	flag.Func("burst", fmt.Sprintf("cold-burst cases, comma-separated PROCESSESxRUNS (default %s)", joinProcCases(cfg.Bursts)), func(v string) error {
		pc, err := parseProcCases(v)
		cfg.Bursts = pc
		return err
	})
	flag.DurationVar(&cfg.BurstRun, "burst-run", cfg.BurstRun, "length of each run of a cold-burst case")
	flag.DurationVar(&cfg.BurstTTL, "burst-ttl", cfg.BurstTTL, "TTL of the lock of the cold-burst cases, for every library")
	flag.DurationVar(&cfg.ProcRun, "proc-run", cfg.ProcRun, "length of each run of a hot-key case with a process per contender")
	flag.IntVar(&cfg.AllocCycles, "alloc-cycles", cfg.AllocCycles, "lock+unlock cycles counted for allocations")
	flag.IntVar(&cfg.PhysConns, "phys-conns", cfg.PhysConns, "connections per node for the physical limit")
	flag.IntVar(&cfg.PhysBatch, "phys-batch", cfg.PhysBatch, "SET+EVALSHA pairs per pipelined round trip for the physical limit")
	flag.Func("held", fmt.Sprintf("locks held at once in the held-locks cases, comma-separated (default %s)", joinInts(cfg.HeldLocks)), func(v string) error {
		n, err := parseInts(v)
		cfg.HeldLocks = n
		return err
	})
	flag.DurationVar(&cfg.HeldTTL, "held-ttl", cfg.HeldTTL, "TTL of the locks of the held-locks cases")
	flag.IntVar(&cfg.HeldRate, "held-rate", cfg.HeldRate, "locks the held-locks cases take a second (0: as fast as 64 goroutines can)")
	flag.DurationVar(&cfg.HeldDuration, "held-duration", cfg.HeldDuration, "how long the held-locks cases hold their locks, measured")
	flag.BoolVar(&cfg.HeldClose, "held-close", cfg.HeldClose, "end the held-locks cases with the Manager's Close, the locks still held, rather than an Unlock of each, counting Close's Warn lines")
	flag.Func("held-backends", fmt.Sprintf("redlock backends of the held-locks cases, comma-separated (default %s)", strings.Join(cfg.HeldBackends, ",")), func(v string) error {
		cfg.HeldBackends = strings.Split(v, ",")
		return nil
	})
	flag.Parse()
	if *runPattern != "" {
		re, err := regexp.Compile(*runPattern)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockbench: -run: %v\n", err)
			return 2
		}
		cfg.Run = re
	}
	cfg.Log = os.Stderr
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockbench: cannot start contender processes: %v\n", err)
		return 1
	}
	cfg.ContenderCmd = []string{self}
	if *memRate > 0 {
		runtime.MemProfileRate = *memRate
	}

	// The first Ctrl-C or SIGTERM stops the run and the servers cleanly;
	// a second one, after stop, ends the process at once (the kernel then
	// kills the servers, which were started to die with it).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()

	res, err := measure(ctx, cfg, *nodes, *redisServer, *cpuProfile, *memProfile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockbench: %v\n", err)
		if errors.Is(err, context.Canceled) {
			return 130
		}
		return 1
	}
	if *out == "" {
		fmt.Print(bench.Markdown(res))
		return 0
	}
	if err := bench.WriteReport(*out, res); err != nil {
		fmt.Fprintf(os.Stderr, "lockbench: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "lockbench: wrote %s/benchmarks.md and %s/benchmarks.svg in %v\n", *out, *out, res.Elapsed.Round(time.Second))
	return 0
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseProcCases parses a comma-separated list of CONTENDERSxRUNS, both
// positive integers.
func parseProcCases(s string) ([]bench.ProcCase, error) {
	var out []bench.ProcCase
	for _, f := range strings.Split(s, ",") {
		c, r, ok := strings.Cut(strings.TrimSpace(f), "x")
		n, err1 := strconv.Atoi(c)
		runs, err2 := strconv.Atoi(r)
		if !ok || err1 != nil || err2 != nil || n < 1 || runs < 1 {
			return nil, fmt.Errorf("%q is not CONTENDERSxRUNS, as 64x5", f)
		}
		out = append(out, bench.ProcCase{Contenders: n, Runs: runs})
	}
	return out, nil
}

func joinProcCases(pc []bench.ProcCase) string {
	s := make([]string, len(pc))
	for i, c := range pc {
		s[i] = c.String()
	}
	return strings.Join(s, ",")
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// measure starts the servers, runs the benchmark and stops the servers,
// whatever happens. With memProfile set, it writes the allocations of the
// whole run, which the measured cases dominate.
func measure(ctx context.Context, cfg bench.Config, nodes int, redisServer, cpuProfile, memProfile string) (*bench.Results, error) {
	bin, err := bench.RedisServerPath(redisServer)
	if err != nil {
		return nil, err
	}
	cluster, err := bench.StartCluster(ctx, bin, nodes)
	if err != nil {
		return nil, err
	}
	defer cluster.Stop()
	fmt.Fprintf(os.Stderr, "lockbench: %d redis-server %s at %v\n", nodes, cluster.Servers[0].Version, cluster.Addrs())
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	if memProfile == "" {
		return bench.Run(ctx, cfg, cluster.Addrs(), cluster.Servers[0].Version)
	}
	f, err := os.Create(memProfile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := bench.Run(ctx, cfg, cluster.Addrs(), cluster.Servers[0].Version)
	if err != nil {
		return nil, err
	}
	runtime.GC() // the profile is that of the last completed cycle
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return nil, err
	}
	return res, nil
}
