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
	// trip, and up to a tenth earlier for jitter.
	Remaining float64
	// MaxHold caps the total time the lock is held by extension, counted
	// from when it was obtained: the last extension ends the TTL at the
	// cap, and the lock then expires. Zero means no cap.
	MaxHold time.Duration
}

// defaultRemaining is the share of the validity left when an extension
// starts by default.
const defaultRemaining = 1.0 / 3

// WithAutoExtend keeps a lock taken by [Manager.Lock], [Manager.TryLock] or
// their multi-key forms extended in the background, each time by the lock's
// TTL, until [Lock.Unlock], the loss of the lock, [AutoExtend.MaxHold], or the
// end of the context given to the call that took the lock. Failed extensions
// are retried while the validity lasts, and none is attempted once it has
// ended, since that could revive a lock another client holds by now.
// [Lock.Lost] says when the lock is gone. [Manager.Do] turns it on.
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

// startWatchdog starts the background extension of a freshly obtained lock.
// It ends with ctx, Unlock, the loss of the lock or MaxHold.
func (l *Lock) startWatchdog(ctx context.Context, a AutoExtend) {
	if a.Remaining == 0 {
		a.Remaining = defaultRemaining
	}
	ctx, l.stopWatchdog = context.WithCancel(ctx)
	l.watchdogDone = make(chan struct{})
	l.mu.Lock()
	l.watchExpiry()
	l.mu.Unlock()
	go l.watchdog(ctx, a, time.Now())
}

func (l *Lock) watchdog(ctx context.Context, a AutoExtend, obtained time.Time) {
	defer close(l.watchdogDone)
	timer := time.NewTimer(l.nextExtension(a.Remaining))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		ttl := l.cfg.ttl
		if a.MaxHold > 0 {
			left := time.Until(obtained.Add(a.MaxHold))
			if left <= l.cfg.drift(left) {
				l.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "dlm: auto-extension reached MaxHold",
					slog.String("key", l.Key()), slog.Duration("max_hold", a.MaxHold))
				return
			}
			ttl = min(ttl, left)
		}
		// The extension must have ended, and released the lock's mutex,
		// before the loss guard, when the lock is reported lost if no
		// extension has succeeded: half a guard earlier still.
		ectx, cancel := context.WithDeadline(ctx, l.Until().Add(-l.cfg.lossGuard()*3/2))
		err := l.Extend(ectx, ttl)
		cancel()
		switch {
		case err == nil:
			timer.Reset(l.nextExtension(a.Remaining))
		case errors.Is(err, ErrLockLost), errors.Is(err, ErrClosed), ctx.Err() != nil:
			return
		default:
			// A transient failure: try again while the validity lasts.
			// The expiry timer reports the loss if none succeeds.
			left := time.Until(l.Until()) - l.cfg.lossGuard()*3/2
			if left <= 0 {
				return
			}
			l.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "dlm: extension failed, retrying",
				slog.String("key", l.Key()), slog.Duration("validity_left", left), slog.Any("error", err))
			timer.Reset(jitter(min(l.cfg.timeout(), left/4)))
		}
	}
}

// nextExtension is the wait until the next extension should start: when the
// given share of the validity remains, but no later than two node timeouts
// before its end, less up to a tenth for jitter.
func (l *Lock) nextExtension(remaining float64) time.Duration {
	validity := l.cfg.ttl - l.cfg.drift(l.cfg.ttl)
	left := time.Until(l.Until())
	wait := min(left-time.Duration(remaining*float64(validity)), left-2*l.cfg.timeout())
	if wait <= 0 {
		return 0
	}
	return wait - rand.N(wait/10+1)
}
