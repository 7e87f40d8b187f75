package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// The held-locks case: one Manager takes Locks locks with TryLock and
// WithAutoExtend, each on a key of its own, and holds them for Hold while
// the library keeps them extended; then it counts the locks lost, and
// releases them, or closes the Manager with them held. It measures what
// holding many locks costs the client process (CPU per held lock-second,
// heap per held lock, goroutines) and the servers (their CPU over the
// hold), how late the extensions start (the renewal lag the Manager
// reports in its events), and how the Manager copes with more than it can
// keep: the locks it refuses with ErrOverloaded, those it loses, and the
// Warn lines it logs.

// HeldResult is one held-locks case.
type HeldResult struct {
	Lib   string
	Locks int // asked for
	Rate  int // taken a second; 0: as fast as they came
	TTL   time.Duration
	Hold  time.Duration // measured window
	// Taken counts the locks obtained (admitted), Refused the TryLock
	// calls refused with ErrOverloaded, Failed those that failed otherwise
	// (FirstError is the first failure, of any step); Acquire is how long
	// taking them all took.
	Taken, Refused, Failed int
	Acquire                time.Duration
	// Lost counts the locks lost before the end of the hold (Lost closed),
	// LostBy those already lost at its start. UnlockErrors counts the
	// Unlock calls that failed at the end.
	Lost, LostBy, UnlockErrors int
	FirstError                 string
	// Shed counts the lost locks the Manager let go of for overload
	// (their Unlock's error wraps ErrOverloaded), of those the case
	// unlocks; FirstLoss is the first other loss's error.
	Shed      int
	FirstLoss string
	// ClientCPU is the CPU time the process used over the hold, ServerCPU
	// the servers'.
	ClientCPU, ServerCPU time.Duration
	// Heap is the growth of the live heap with the locks held, after a
	// collection, since before they were taken; Goroutines the growth of
	// the goroutines.
	Heap       int64
	Goroutines int
	// Lag is the renewal lag the Manager reported over the hold (one
	// sample per round of extensions: how late its most overdue one
	// started); Overloads how many reports of falling behind it made
	// over the whole case, while the locks were taken too.
	Lag       Dist
	Overloads int
	// Warn counts the lines the Manager logged at Warn from the first
	// TryLock to the end of the hold; WarnPerNodeSecond is the most of
	// them of one node, or of the Manager's own lines, in one second;
	// FirstWarn is the first one's message. UnlockWarn counts those the
	// Unlock calls after the hold logged (one per lock found lost).
	Warn, WarnPerNodeSecond, UnlockWarn int
	FirstWarn, DensestWarn              string
	// Closed says the case ended with Close, the locks still held, rather
	// than with an Unlock of each; CloseWarn then counts the Warn lines
	// logged from Close until a second after it returned, and Close is how
	// long it took.
	Closed    bool
	CloseWarn int
	Close     time.Duration
}

// CPUPerLockSecond is the client CPU per held lock-second; 0 when nothing
// was held.
func (r *HeldResult) CPUPerLockSecond() time.Duration {
	return perLockSecond(r.ClientCPU, r.Taken, r.Hold)
}

// ServerCPUPerLockSecond is the servers' CPU per held lock-second.
func (r *HeldResult) ServerCPUPerLockSecond() time.Duration {
	return perLockSecond(r.ServerCPU, r.Taken, r.Hold)
}

// HeapPerLock is the heap growth per held lock, in bytes.
func (r *HeldResult) HeapPerLock() float64 {
	if r.Taken == 0 {
		return 0
	}
	return float64(r.Heap) / float64(r.Taken)
}

func perLockSecond(cpu time.Duration, locks int, hold time.Duration) time.Duration {
	if locks == 0 || hold <= 0 {
		return 0
	}
	return time.Duration(float64(cpu) / (float64(locks) * hold.Seconds()))
}

// heldGoroutines take the locks, and release them, at once.
const heldGoroutines = 64

// lagHook collects the renewal lag a Manager reports, and its overloads.
type lagHook struct {
	mu        sync.Mutex
	on        bool
	lags      []time.Duration
	overloads int
}

func (h *lagHook) OnEvent(_ context.Context, e *dlm.Event) {
	if e.Kind != dlm.EventRenewal {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Overload is counted over the whole case: locks may be lost while
	// they are taken.
	if e.Err != nil {
		h.overloads++
	}
	if h.on {
		h.lags = append(h.lags, e.Duration)
	}
}

// record starts or stops the collection.
func (h *lagHook) record(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on = on
}

// runHeld runs one held-locks case on a Manager of its own over the nodes
// at addrs, through backend: n locks of ttl, taken at rate a second (0:
// as fast as they come), held for hold after a TTL of warm-up once they
// are all taken, then unlocked, or, with closeHeld, left to the Manager's
// Close.
func runHeld(ctx context.Context, backend string, addrs []string, name string, n, rate int, ttl, hold, nodeTimeout time.Duration, closeHeld bool) (HeldResult, error) {
	r := HeldResult{Lib: backend, Locks: n, Rate: rate, TTL: ttl, Hold: hold, Closed: closeHeld}
	hook := &lagHook{}
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = "redis+" + backend + "://" + a
	}
	warns := newWarnCounter(time.Now())
	opts := []dlm.ManagerOption{dlm.WithTTL(ttl), dlm.WithHook(hook), dlm.WithLogger(slog.New(warns))}
	if nodeTimeout > 0 {
		opts = append(opts, dlm.WithNodeTimeout(nodeTimeout))
	}
	m, err := dlm.Open(urls, opts...)
	if err != nil {
		return r, err
	}
	closed := false
	defer func() {
		if !closed {
			m.Close()
		}
	}()
	var first atomic.Pointer[string]
	fail := func(err error) {
		s := err.Error()
		first.CompareAndSwap(nil, &s)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()

	// The locks' own events go nowhere (WithHook(nil) for each call): a
	// hook that sees every extension of every lock costs the client, and
	// the case measures the library, not a hook.
	locks := make([]*dlm.Lock, n)
	var failed, refused atomic.Int64
	start := time.Now()
	forEachShare(n, func(i int) {
		if rate > 0 {
			if err := sleepCtx(ctx, time.Until(start.Add(time.Duration(i)*time.Second/time.Duration(rate)))); err != nil {
				return
			}
		}
		l, err := m.TryLock(ctx, fmt.Sprintf("%s/%d", name, i), dlm.WithAutoExtend(dlm.AutoExtend{}), dlm.WithHook(nil))
		switch {
		case errors.Is(err, dlm.ErrOverloaded):
			refused.Add(1)
			return
		case err != nil:
			failed.Add(1)
			fail(err)
			return
		}
		locks[i] = l
	})
	r.Acquire = time.Since(start)
	if err := ctx.Err(); err != nil {
		return r, err
	}
	r.Failed, r.Refused = int(failed.Load()), int(refused.Load())
	r.Taken = n - r.Failed - r.Refused
	if err := sleepCtx(ctx, ttl); err != nil {
		return r, err
	}
	r.LostBy = countLost(locks)

	hook.record(true)
	cpu0, scpu0 := processCPU(), serversCPU(ctx, addrs)
	err = sleepCtx(ctx, hold)
	cpu1, scpu1 := processCPU(), serversCPU(ctx, addrs)
	hook.record(false)
	if err != nil {
		return r, err
	}
	r.ClientCPU = cpu1 - cpu0
	if scpu0 > 0 && scpu1 > scpu0 {
		r.ServerCPU = scpu1 - scpu0
	}
	r.Goroutines = runtime.NumGoroutine() - goroutines
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	r.Heap = int64(after.HeapAlloc) - int64(before.HeapAlloc)
	r.Lost = countLost(locks)

	hook.mu.Lock()
	r.Lag, r.Overloads = Summarize(hook.lags), hook.overloads
	hook.mu.Unlock()

	r.Warn, r.WarnPerNodeSecond, r.FirstWarn = warns.counts()
	r.DensestWarn = warns.densestLine()
	since := warns.mark()
	if closeHeld {
		t0 := time.Now()
		closed = true
		if err := m.Close(); err != nil {
			fail(err)
		}
		r.Close = time.Since(t0)
		// A Warn line counting what happened within a second may come
		// up to a second after it.
		if err := sleepCtx(ctx, time.Second); err != nil {
			return r, err
		}
		r.CloseWarn = since()
	} else {
		var unlockErrs, shed atomic.Int64
		var firstLoss atomic.Pointer[string]
		forEachShare(n, func(i int) {
			if l := locks[i]; l != nil {
				err := l.Unlock(context.WithoutCancel(ctx))
				switch {
				case err == nil:
					return
				case errors.Is(err, dlm.ErrOverloaded):
					shed.Add(1)
				case errors.Is(err, dlm.ErrLockLost):
					s := err.Error()
					firstLoss.CompareAndSwap(nil, &s)
				default:
					fail(err)
				}
				unlockErrs.Add(1)
			}
		})
		r.UnlockErrors, r.Shed = int(unlockErrs.Load()), int(shed.Load())
		if s := firstLoss.Load(); s != nil {
			r.FirstLoss = *s
		}
		r.UnlockWarn = since()
	}
	if s := first.Load(); s != nil {
		r.FirstError = *s
	}
	return r, ctx.Err()
}

// forEachShare runs f(i) for i in [0, n), on heldGoroutines goroutines
// taking the indices in turn.
func forEachShare(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(heldGoroutines, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// countLost counts the locks whose Lost channel is closed.
func countLost(locks []*dlm.Lock) int {
	n := 0
	for _, l := range locks {
		if l == nil {
			continue
		}
		select {
		case <-l.Lost():
			n++
		default:
		}
	}
	return n
}

// sleepCtx sleeps for d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// String summarizes r on one line, for the progress log.
func (r *HeldResult) String() string {
	end := fmt.Sprintf("unlock errors %d (%d Warn lines), %d lost shed with ErrOverloaded, first other loss %q;", r.UnlockErrors, r.UnlockWarn, r.Shed, r.FirstLoss)
	if r.Closed {
		end = fmt.Sprintf("Close in %v with %d Warn lines", r.Close.Round(time.Millisecond), r.CloseWarn)
	}
	return fmt.Sprintf("%d asked, %d taken (admitted) in %v, %d refused with ErrOverloaded, %d failed otherwise, lost %d (%d before the hold), client CPU %v per lock-second, servers %v per lock-second, heap %.0f B per lock, goroutines %+d, renewal lag p99 %v max %v (%d rounds, %d overloaded), %d Warn lines (at most %d of a node in a second: %s) %q, %s %s",
		r.Locks, r.Taken, r.Acquire.Round(time.Millisecond), r.Refused, r.Failed, r.Lost, r.LostBy, r.CPUPerLockSecond(), r.ServerCPUPerLockSecond(), r.HeapPerLock(),
		r.Goroutines, r.Lag.P99, r.Lag.Max, r.Lag.N, r.Overloads, r.Warn, r.WarnPerNodeSecond, r.DensestWarn, r.FirstWarn, end, r.FirstError)
}
