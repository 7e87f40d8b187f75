package bench

import (
	"fmt"
	"strings"
	"time"
)

// writeHeld writes the held-locks section: for each size and backend, the
// locks lost, the client's CPU per held lock-second, the servers', the
// heap per lock, the goroutines and the renewal lag.
func writeHeld(b *strings.Builder, r *Results) {
	cfg := &r.Config
	if len(cfg.HeldLocks) == 0 {
		return
	}
	fmt.Fprintf(b, "## Holding many locks\n\n")
	rate := "as fast as they come"
	if cfg.HeldRate > 0 {
		rate = fmt.Sprintf("at %s a second", groupThousands(int64(cfg.HeldRate)))
	}
	fmt.Fprintf(b, "One `Manager` takes each number of locks with `TryLock` and `WithAutoExtend(dlm.AutoExtend{})`, each on a key of its own, with a TTL of %v, from %d goroutines, %s; once they are all taken it waits one TTL, then holds them for %v while the library keeps them extended, and counts the locks lost (`Lost()` closed) by the end, and before the hold. **Asked** is the number of `TryLock` calls, **admitted** those that returned a lock, **refused** those refused with `dlm.ErrOverloaded` (the Manager's admission: it takes no auto-extended lock it could not keep); **lost** counts the admitted locks lost, and in brackets those lost before the hold and those the Manager let go of for overload (`ErrOverloaded`, counted at their `Unlock`). **Warn lines** counts the lines the Manager logged at Warn (its `WithLogger`) from the first `TryLock` to the end of the hold, and in brackets the most of one node, or of the Manager's own lines, within one second; **Close** counts the Warn lines logged from `Close` until a second after it returned, in the cases that end with `Close` while the locks are held (`-held-close`) rather than unlocking each. **Client CPU** is the CPU time the process used over the hold per held lock-second, **server CPU** the %d servers' (INFO cpu); **heap** is the growth of the live heap per held lock after a collection, **goroutines** the growth of the process's goroutines with the locks held. **Renewal lag** is the lag the `Manager` reports in its `EventRenewal` events, one per round of extensions: how late the most overdue extension of the round started; **overloaded** counts the reports of falling behind (an `EventRenewal` whose `Err` wraps `ErrRenewalBehind`) over the whole case, while the locks are taken too. The cases run last, with every other library closed.\n\n",
		cfg.HeldTTL, heldGoroutines, rate, cfg.HeldDuration, r.Nodes)
	t := newTable(b, "l", "library", "asked", "admitted", "refused", "taken in", "lost", "client CPU/lock·s", "server CPU/lock·s", "heap/lock", "goroutines", "renewal lag p99", "lag max", "overloaded", "Warn lines", "Close", "errors")
	for _, n := range cfg.HeldLocks {
		for _, backend := range cfg.HeldBackends {
			h := r.heldOf(backend, n)
			name := "redlock+" + backend
			if h == nil {
				t.row(name, groupThousands(int64(n)), missing, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing, missing)
				continue
			}
			lag, lagMax := missing, missing
			if h.Lag.N > 0 {
				lag, lagMax = fmtDur(h.Lag.P99), fmtDur(h.Lag.Max)
			}
			scpu := missing
			if h.ServerCPU > 0 {
				scpu = fmtDur(h.ServerCPUPerLockSecond())
			}
			closeCell := missing
			if h.Closed {
				closeCell = fmt.Sprintf("%d Warn lines in %v", h.CloseWarn, h.Close.Round(time.Millisecond))
			}
			t.row(name, groupThousands(int64(n)), groupThousands(int64(h.Taken)), groupThousands(int64(h.Refused)), h.Acquire.Round(100*1e6).String(),
				fmt.Sprintf("%d of %d (%d before the hold, %d shed)", h.Lost, h.Taken, h.LostBy, h.Shed),
				fmtDur(h.CPUPerLockSecond()), scpu, fmt.Sprintf("%.0f B", h.HeapPerLock()), fmt.Sprintf("%+d", h.Goroutines),
				lag, lagMax, fmt.Sprint(h.Overloads), fmt.Sprintf("%s (%d/node·s)", groupThousands(int64(h.Warn)), h.WarnPerNodeSecond), closeCell,
				errorsCell(h.Failed+h.UnlockErrors, h.FirstError))
		}
	}
	b.WriteString("\n")
}

// heldOf returns the held-locks case of backend with n locks, or nil.
func (r *Results) heldOf(backend string, n int) *HeldResult {
	for i := range r.Held {
		if h := &r.Held[i]; h.Lib == backend && h.Locks == n {
			return h
		}
	}
	return nil
}
