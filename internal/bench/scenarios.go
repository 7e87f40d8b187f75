package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// UncontendedResult is one run of lock+unlock cycles by goroutines that
// each lock a key of their own.
type UncontendedResult struct {
	Lib        string
	Goroutines int
	Cycles     int           // completed lock+unlock cycles
	Elapsed    time.Duration // from the start until the last goroutine stopped
	// CPU is the CPU time, user and system, the whole client process used
	// meanwhile (getrusage); 0 where it cannot be read.
	CPU time.Duration
	// ServerCPU is the CPU time all the servers used meanwhile (INFO cpu);
	// 0 where they do not tell.
	ServerCPU  time.Duration
	Errors     int
	FirstError string
}

// PerSec is the rate of cycles.
func (r *UncontendedResult) PerSec() float64 { return perSec(r.Cycles, r.Elapsed) }

// CPUPerCycle is the client's CPU time per cycle, 0 when unknown.
func (r *UncontendedResult) CPUPerCycle() time.Duration {
	if r.Cycles == 0 || r.CPU <= 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Cycles)
}

// ServerCPUPerCycle is the servers' CPU time per cycle, 0 when unknown.
func (r *UncontendedResult) ServerCPUPerCycle() time.Duration {
	if r.Cycles == 0 || r.ServerCPU <= 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Cycles)
}

// add adds the cycles, time and errors of another round to r.
func (r *UncontendedResult) add(o UncontendedResult) {
	r.Cycles += o.Cycles
	r.Elapsed += o.Elapsed
	r.CPU += o.CPU
	r.ServerCPU += o.ServerCPU
	if r.Errors += o.Errors; r.FirstError == "" {
		r.FirstError = o.FirstError
	}
}

// runUncontended runs goroutines, each locking and unlocking a key of its
// own (keyPrefix and its number) back to back, for d. It returns an error
// only when ctx ends first.
func runUncontended(ctx context.Context, lk Locker, keyPrefix string, goroutines int, d time.Duration) (UncontendedResult, error) {
	return runCycles(ctx, func(i int) (Mutex, error) { return lk.Mutex(fmt.Sprintf("%s/%d", keyPrefix, i)), nil }, goroutines, d)
}

// runCycles runs goroutines, goroutine i locking and unlocking the handle
// handle(i) back to back, for d. It returns an error when a handle cannot
// be made, or when ctx ends first.
func runCycles(ctx context.Context, handle func(i int) (Mutex, error), goroutines int, d time.Duration) (UncontendedResult, error) {
	r := UncontendedResult{Goroutines: goroutines}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		ready = make(chan struct{})
	)
	handles := make([]Mutex, goroutines)
	for i := range handles {
		m, err := handle(i)
		if err != nil {
			return r, err
		}
		handles[i] = m
	}
	var deadline time.Time // set before ready is closed
	for _, m := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			var n, errs int
			var first error
			for ctx.Err() == nil && time.Now().Before(deadline) {
				err := m.Lock(ctx)
				if err == nil {
					err = m.Unlock(ctx)
				}
				if err != nil {
					if errs++; first == nil {
						first = err
					}
					continue
				}
				n++
			}
			mu.Lock()
			r.Cycles += n
			if r.Errors += errs; r.FirstError == "" && first != nil {
				r.FirstError = first.Error()
			}
			mu.Unlock()
		}()
	}
	cpu := processCPU()
	start := time.Now()
	deadline = start.Add(d)
	close(ready)
	wg.Wait()
	r.Elapsed = time.Since(start)
	if cpu > 0 {
		r.CPU = processCPU() - cpu
	}
	return r, ctx.Err()
}

// LatencyResult is the latency of single lock and unlock calls at low load:
// one goroutine, with a pause between cycles.
type LatencyResult struct {
	Lib        string
	Acquire    Dist // Lock call to return
	Release    Dist // Unlock call to return
	Errors     int
	FirstError string

	acq, rel []time.Duration // the samples, until summarized
}

// runLatency locks and unlocks key from one goroutine for d, pausing gap
// after each cycle, times each call and adds the times to r's samples.
func runLatency(ctx context.Context, lk Locker, key string, d, gap time.Duration, r *LatencyResult) error {
	m := lk.Mutex(key)
	for deadline := time.Now().Add(d); ctx.Err() == nil && time.Now().Before(deadline); time.Sleep(gap) {
		t0 := time.Now()
		err := m.Lock(ctx)
		t1 := time.Now()
		if err == nil {
			err = m.Unlock(ctx)
		}
		t2 := time.Now()
		if err != nil {
			if r.Errors++; r.FirstError == "" {
				r.FirstError = err.Error()
			}
			continue
		}
		r.acq, r.rel = append(r.acq, t1.Sub(t0)), append(r.rel, t2.Sub(t1))
	}
	return ctx.Err()
}

// summarize sets Acquire and Release from the samples.
func (r *LatencyResult) summarize() {
	r.Acquire, r.Release = Summarize(r.acq), Summarize(r.rel)
}

// AllocResult is the heap allocation of one uncontended lock+unlock cycle.
type AllocResult struct {
	Lib     string
	Cycles  int
	Allocs  float64 // heap objects allocated per cycle
	Bytes   float64 // heap bytes allocated per cycle
	Elapsed time.Duration
	Errors  int
}

// allocWarmup is the number of cycles run before counting allocations, so
// that connections and scripts are in place.
const allocWarmup = 100

// runAllocs runs cycles lock+unlock cycles on key from one goroutine and
// counts the heap allocations of the whole process meanwhile, so that the
// client libraries' own goroutines are counted too.
func runAllocs(ctx context.Context, lk Locker, key string, cycles int) (AllocResult, error) {
	return countAllocs(ctx, lk.Mutex(key), cycles)
}

// countAllocs is runAllocs on the handle m.
func countAllocs(ctx context.Context, m Mutex, cycles int) (AllocResult, error) {
	r := AllocResult{Cycles: cycles}
	cycle := func() {
		err := m.Lock(ctx)
		if err == nil {
			err = m.Unlock(ctx)
		}
		if err != nil {
			r.Errors++
		}
	}
	for range allocWarmup {
		cycle()
	}
	r.Errors = 0
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range cycles {
		cycle()
	}
	r.Elapsed = time.Since(start)
	runtime.ReadMemStats(&after)
	r.Allocs = float64(after.Mallocs-before.Mallocs) / float64(cycles)
	r.Bytes = float64(after.TotalAlloc-before.TotalAlloc) / float64(cycles)
	return r, ctx.Err()
}
