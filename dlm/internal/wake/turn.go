package wake

import (
	"context"
	"errors"
	"time"
)

// ErrDone is what [Watcher.Wait] returns when its done channel closes
// first.
var ErrDone = errors.New("dlm: wake: done")

// Wait waits until the next attempt is due: when timer fires, or when a
// release is announced to wt — after a spread wait when other clients heard
// it too (see [Watcher.spread]), unless one of them obtains the lock
// meanwhile. attempt is how long the last attempt took. A nil wt waits for
// the timer alone. It returns ctx's error, or [ErrDone] when done closes.
//
// When a wake-up ends the wait, timer is stopped and drained, so that its
// next Reset starts a full wait.
func (wt *Watcher) Wait(ctx context.Context, done <-chan struct{}, timer *time.Timer, attempt time.Duration) error {
	wake := wt.Woken()
	var spread *time.Timer
	defer func() {
		if spread != nil {
			spread.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return ErrDone
		case <-timer.C:
			return nil
		case <-wake:
		}
		d := wt.spread(attempt)
		if d == 0 {
			stopTimer(timer)
			return nil
		}
		select {
		case <-wt.taken: // a grant announced before this release
		default:
		}
		if spread == nil {
			spread = time.NewTimer(d)
		} else {
			spread.Reset(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return ErrDone
		case <-spread.C:
			stopTimer(timer)
			return nil
		case <-timer.C:
			return nil
		case <-wt.taken:
			// Another client obtained the lock: wait for its release.
			stopTimer(spread)
		}
	}
}

// stopTimer stops t and drains a tick it already sent, so that t.Reset
// starts a full wait. (With the timers of Go 1.22, which the module's
// go.mod admits and GODEBUG asynctimerchan=1 selects, Stop leaves a tick
// that fired in the channel: the next wait would end at once, an attempt
// without a delay.)
func stopTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}
