package dlm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// AutoExtend configures the extension of a lock in the background while it
// is held (see [WithAutoExtend]). The zero value uses the defaults.
type AutoExtend struct {
	// Remaining is the share of the validity left when an extension starts,
	// in (0, 1); 0 means the default, 1/3. An extension starts earlier
	// still if less than two node timeouts would be left for its round
	// trip (but not before half the wait), and up to a tenth earlier for
	// jitter.
	Remaining float64
	// MaxHold caps the total time the lock is held by extension, counted
	// from when it was obtained: the last extension ends the TTL at the
	// cap, and the lock then expires. Zero means no cap.
	MaxHold time.Duration
}

// defaultRemaining is the share of the validity left when an extension
// starts by default.
const defaultRemaining = 1.0 / 3

// WithAutoExtend keeps a lock taken by [Manager.Lock], [Manager.TryLock],
// their multi-key forms or [Manager.Resume] extended in the background, each
// time by the lock's TTL, until [Lock.Unlock], the loss of the lock,
// [AutoExtend.MaxHold], or [Manager.Close]. The context given to the call
// that took the lock bounds only the wait for it: cancelling it once the
// call returned does not stop extension, so
//
//	ctx, cancel := context.WithTimeout(ctx, time.Second)
//	l, err := m.Lock(ctx, "leader", dlm.WithAutoExtend(dlm.AutoExtend{}))
//	cancel()
//
// keeps the lock until it is unlocked or lost. ([Manager.Do] is the
// exception: cancelling its context cancels fn, stops extension, and
// releases the lock once fn returns.) Failed extensions are retried while
// the validity lasts, and none is attempted once it has ended, since that
// could revive a lock another client holds by now. [Lock.Lost] says when
// the lock is gone. [Manager.Do] turns it on.
func WithAutoExtend(a AutoExtend) Option {
	return optionFunc(func(c *config) { c.autoExtend = &a })
}

func (a *AutoExtend) validate() error {
	switch {
	case a.Remaining < 0 || a.Remaining >= 1 || a.Remaining != a.Remaining:
		return fmt.Errorf("%w: AutoExtend.Remaining %v: want a share in (0, 1), or 0 for the default", ErrInvalid, a.Remaining)
	case a.MaxHold < 0:
		return fmt.Errorf("%w: AutoExtend.MaxHold %v: want a positive duration, or 0 for no cap", ErrInvalid, a.MaxHold)
	}
	return nil
}

// autoExtend starts the lock's auto-extension if its options ask for it.
// ctx, the context of the call that took the lock, bounds only that call's
// wait: extension outlives it (see [WithAutoExtend]), except under Do,
// which ties extension to its own context.
func (l *Lock) autoExtend(ctx context.Context) {
	if l.cfg.autoExtend == nil {
		return
	}
	wctx := context.WithoutCancel(ctx)
	if l.cfg.extendWithCtx {
		wctx = ctx
	}
	l.startWatchdog(wctx, *l.cfg.autoExtend)
}

// startWatchdog starts the background extension of a freshly obtained lock
// as one of the manager's goroutines, so that [Manager.Close] stops it and
// waits for it. It ends with ctx, Unlock, the loss of the lock, MaxHold or
// Close; callers pass a ctx without cancellation where extension must
// outlive the call that took the lock.
func (l *Lock) startWatchdog(ctx context.Context, a AutoExtend) {
	if a.Remaining == 0 {
		a.Remaining = defaultRemaining
	}
	ctx, l.watchdog.stop = context.WithCancel(ctx)
	l.watchdog.done = make(chan struct{})
	l.mu.Lock()
	l.watchExpiry()
	l.unlockMu()
	obtained := time.Now()
	l.m.work.Spawn(func() { l.keepExtended(ctx, a, obtained) })
}

// watchdog is a lock's auto-extension: stop ends it, done is closed when
// it has returned. Both are nil when the lock is not auto-extended.
type watchdog struct {
	stop context.CancelFunc
	done chan struct{}
}

// halt stops the watchdog, if one runs, and waits for it to return.
func (w *watchdog) halt() {
	if w.stop != nil {
		w.stop()
		<-w.done
	}
}

// keepExtended is the watchdog's goroutine: it extends l before its
// validity runs short, and retries a failed extension while the validity
// lasts. It returns when ctx ends, the manager closes, MaxHold is reached,
// or l is lost or unlocked.
func (l *Lock) keepExtended(ctx context.Context, a AutoExtend, obtained time.Time) {
	defer close(l.watchdog.done)
	timer := time.NewTimer(l.nextExtension(a.Remaining))
	defer timer.Stop()
	// Extend returns once a quorum answered; the requests still due to the
	// other nodes must not be cancelled with it, or only the fastest
	// quorum would keep the key. Each extension's context is cancelled
	// when the next one starts or the watchdog stops.
	cancelLast := context.CancelFunc(func() {})
	defer func() { cancelLast() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.m.done:
			return
		case <-timer.C:
		}
		ttl := l.cfg.ttl
		if a.MaxHold > 0 {
			left := time.Until(obtained.Add(a.MaxHold))
			if l.cfg.validity(left) <= 0 {
				l.logMaxHold(ctx, a)
				return
			}
			ttl = min(ttl, left)
		}
		// The extension must have ended before the loss guard, when the
		// lock is reported lost if no extension has succeeded (a later
		// success no longer counts): half a guard earlier still.
		cancelLast()
		ectx, cancel := context.WithDeadline(ctx, l.Until().Add(-l.cfg.lossGuard()*3/2))
		cancelLast = cancel
		err := l.Extend(ectx, ttl)
		switch {
		case err == nil && ttl < l.cfg.ttl:
			// This extension ends the TTL at MaxHold; another would
			// only shorten it, over and over as MaxHold nears. Its
			// requests still due end by their deadline.
			cancelLast = func() {}
			l.logMaxHold(ctx, a)
			return
		case err == nil:
			timer.Reset(l.nextExtension(a.Remaining))
		case errors.Is(err, ErrLockLost), errors.Is(err, ErrClosed), errors.Is(err, ErrNotHeld), ctx.Err() != nil:
			return
		default:
			// A transient failure: try again while the validity lasts.
			// The expiry timer reports the loss if none succeeds.
			left := time.Until(l.Until()) - l.cfg.lossGuard()*3/2
			if left <= 0 {
				return
			}
			// Retries come closer as the end nears, but not closer than a
			// millisecond: the gaps would otherwise shrink forever.
			wait := max(jitter(min(l.cfg.timeout(), left/4)), time.Millisecond)
			if wait >= left {
				return
			}
			// Extend reported the failure as an event.
			timer.Reset(wait)
		}
	}
}

func (l *Lock) logMaxHold(ctx context.Context, a AutoExtend) {
	l.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "dlm: auto-extension reached MaxHold",
		slog.String("key", l.Key()), slog.Duration("max_hold", a.MaxHold))
}

// nextExtension is the wait until the next extension should start: when the
// given share of the validity remains, but no later than two node timeouts
// before its end, less up to a tenth for jitter. When two node timeouts take
// up most of the validity, it still waits half as long as the share alone
// would have it wait: extensions would otherwise go back to back, as fast as
// the nodes answer.
func (l *Lock) nextExtension(remaining float64) time.Duration {
	validity := l.cfg.validity(l.cfg.ttl)
	left := time.Until(l.Until())
	atShare := left - time.Duration(remaining*float64(validity))
	wait := max(min(atShare, left-2*l.cfg.timeout()), atShare/2)
	if wait <= 0 {
		return 0
	}
	return wait - rand.N(wait/10+1)
}
