package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// Kinds of the lease cases: redlock's read lock and semaphore, measured
// beside its mutex. redsync has neither.
const (
	KindRead      = "read"
	KindSemaphore = "semaphore"
)

// SharedKinds are the lease cases' kinds, in the report's order.
var SharedKinds = []string{KindRead, KindSemaphore}

// A SharedLocker is a Locker that also has read locks and semaphores:
// redlock's. The lease cases run on these only.
type SharedLocker interface {
	Locker
	// Shared returns one goroutine's handle on a lease of kind on key: a
	// read lock (Lock is RLock), or a permit of the semaphore key of limit
	// permits (Lock is Acquire).
	Shared(kind, key string, limit int) (Mutex, error)
}

// SharedResult is one lease case: goroutines each taking and giving back a
// lease of Kind on a key of their own, back to back.
type SharedResult struct {
	Kind string
	UncontendedResult
}

// SharedAllocResult is the heap allocation of one uncontended cycle of a
// lease of Kind.
type SharedAllocResult struct {
	Kind string
	AllocResult
}

// sharedLibraries returns the libraries the lease cases run on: redlock
// over each backend in the default mode (fairness does not apply to
// leases).
func sharedLibraries(libs []Library) []Library {
	var out []Library
	for _, l := range libs {
		if l.Backend != "" && !l.Fair {
			out = append(out, l)
		}
	}
	return out
}

// sharedCases runs the lease cases, "KIND/gN/LIB" for every kind and
// SharedGoroutines, in rounds as the mutex's uncontended cases, then their
// allocations, "allocs-KIND/LIB".
func (s *suite) sharedCases(ctx context.Context, res *Results) error {
	cfg := &s.cfg
	libs := sharedLibraries(res.Libraries)
	share := cfg.Duration / time.Duration(cfg.Rounds)
	for _, kind := range SharedKinds {
		for _, g := range cfg.SharedGoroutines {
			acc := map[string]*SharedResult{}
			ran, err := s.rounds(ctx, libs, fmt.Sprintf("%s/g%d", kind, g), cfg.Rounds, func(lib Library, lk Locker, name string, round int) error {
				handle, err := sharedHandles(lk, kind, fmt.Sprintf("%s/r%d", name, round), cfg.SemLimit)
				if err != nil {
					return err
				}
				// Untimed cycles first, so that the servers have the
				// lease's scripts before anything is timed.
				if _, err := runCycles(ctx, func(i int) (Mutex, error) { return handle(-1 - i) }, 2, 20*time.Millisecond); err != nil {
					return err
				}
				runtime.GC()
				scpu := serversCPU(ctx, s.addrs)
				r, err := runCycles(ctx, handle, g, share)
				if after := serversCPU(ctx, s.addrs); scpu > 0 && after > scpu {
					r.ServerCPU = after - scpu
				}
				if acc[lib.ID] == nil {
					acc[lib.ID] = &SharedResult{Kind: kind, UncontendedResult: UncontendedResult{Lib: lib.ID, Goroutines: g}}
				}
				acc[lib.ID].add(r)
				return err
			})
			if err != nil {
				return err
			}
			for _, lib := range ran {
				r := acc[lib.ID]
				res.Shared = append(res.Shared, *r)
				s.logf("%s/g%d/%s: %.0f cycles/s, CPU per cycle %v client, %v servers, errors %d %s", kind, g, lib.ID, r.PerSec(), r.CPUPerCycle(), r.ServerCPUPerCycle(), r.Errors, r.FirstError)
			}
		}
	}
	for _, kind := range SharedKinds {
		_, err := s.rounds(ctx, libs, "allocs-"+kind, 1, func(lib Library, lk Locker, name string, _ int) error {
			handle, err := sharedHandles(lk, kind, name, cfg.SemLimit)
			if err != nil {
				return err
			}
			m, err := handle(0)
			if err != nil {
				return err
			}
			r, err := countAllocs(ctx, m, cfg.AllocCycles)
			r.Lib = lib.ID
			res.SharedAllocs = append(res.SharedAllocs, SharedAllocResult{Kind: kind, AllocResult: r})
			s.logf("%s: %.1f allocs, %.0f B per cycle, errors %d", name, r.Allocs, r.Bytes, r.Errors)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sharedHandles returns the handles of lk's leases of kind on keys of
// their own: keyPrefix and the goroutine's number.
func sharedHandles(lk Locker, kind, keyPrefix string, limit int) (func(i int) (Mutex, error), error) {
	sl, ok := lk.(SharedLocker)
	if !ok {
		return nil, fmt.Errorf("%T has no read locks or semaphores", lk)
	}
	return func(i int) (Mutex, error) { return sl.Shared(kind, fmt.Sprintf("%s/%d", keyPrefix, i), limit) }, nil
}

// sharedOf returns lib's result of the lease case of kind with goroutines.
func (r *Results) sharedOf(kind, lib string, goroutines int) *SharedResult {
	for i := range r.Shared {
		if u := &r.Shared[i]; u.Kind == kind && u.Lib == lib && u.Goroutines == goroutines {
			return u
		}
	}
	return nil
}

// sharedAllocsOf returns lib's allocations per cycle of a lease of kind.
func (r *Results) sharedAllocsOf(kind, lib string) *SharedAllocResult {
	for i := range r.SharedAllocs {
		if a := &r.SharedAllocs[i]; a.Kind == kind && a.Lib == lib {
			return a
		}
	}
	return nil
}

// kindPhrase names a lease case's cycle in the report.
func kindPhrase(kind string, limit int) string {
	if kind == KindSemaphore {
		return fmt.Sprintf("semaphore L=%d: Acquire+Unlock", limit)
	}
	return "read lock: RLock+Unlock"
}

func writeShared(b *strings.Builder, r *Results) {
	cfg := &r.Config
	if len(cfg.SharedGoroutines) == 0 {
		return
	}
	fmt.Fprintf(b, "### Read lock and semaphore\n\n")
	fmt.Fprintf(b, "The same cycle for redlock's leases, which redsync does not have: goroutines each take and give back a lease on a key of their own, back to back, for %v — a **read lock** (`RLock` and `Unlock`; a majority of the %d nodes, as the mutex) and a permit of a **semaphore** of limit %d (`Acquire` and `Unlock`; a permit needs %d of the %d nodes, `dlm.SemaphoreQuorum`). **vs the mutex** is the rate over the same backend's lock+unlock with as many goroutines in the table above; **allocs/cycle** is counted with one goroutine, %d cycles after %d of warm-up, as in [Allocations](#5-allocations-per-uncontended-lockunlock).\n\n",
		cfg.Duration, r.Nodes, cfg.SemLimit, dlm.SemaphoreQuorum(r.Nodes, cfg.SemLimit), r.Nodes, cfg.AllocCycles, allocWarmup)
	t := newTable(b, "ll", "library", "lease", "goroutines", "cycles/s", "vs the mutex", "client CPU/cycle", "server CPU/cycle", "allocs/cycle", "errors")
	for _, kind := range SharedKinds {
		for _, g := range cfg.SharedGoroutines {
			for _, lib := range sharedLibraries(r.Libraries) {
				u := r.sharedOf(kind, lib.ID, g)
				if u == nil {
					t.row(lib.Name, kindPhrase(kind, cfg.SemLimit), fmt.Sprint(g), missing, missing, missing, missing, missing, missing)
					continue
				}
				cpu, scpu, vs, allocs := missing, missing, missing, missing
				if c := u.CPUPerCycle(); c > 0 {
					cpu = fmtDur(c)
				}
				if c := u.ServerCPUPerCycle(); c > 0 {
					scpu = fmtDur(c)
				}
				if mu := r.uncontendedOf(lib.ID, g); mu != nil {
					vs = fmtRatio(Ratio(u.PerSec(), mu.PerSec()))
				}
				if a := r.sharedAllocsOf(kind, lib.ID); a != nil {
					allocs = trimFloat(a.Allocs)
				}
				t.row(lib.Name, kindPhrase(kind, cfg.SemLimit), fmt.Sprint(g), fmtRate(u.PerSec()), vs, cpu, scpu, allocs, errorsCell(u.Errors, u.FirstError))
			}
		}
	}
	b.WriteString("\n")
}
