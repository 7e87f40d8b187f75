package wake

import (
	"context"
	"errors"
	"time"
)

// ErrDone is what [Watcher.Wait] returns when its done channel closes
// first.
var ErrDone = errors.New("dlm: wake: done")

// Attempt describes the refused attempt before a [Watcher.Wait].
type Attempt struct {
	// Took is how long the attempt took.
	Took time.Duration
	// Own is how many grants of the attempt's own the nodes that may have
	// granted it may have announced (one per key on each such node that
	// announces grants): grants heard beyond them are another client's.
	Own int
	// Settle is how long after an announced release a refused attempt
	// looks again: the node timeout, within which the release reaches
	// every node.
	Settle time.Duration
}

// Wait waits until the next attempt is due: when timer fires, or when a
// release is announced to wt — after a spread wait when other clients heard
// it too (see [Watcher.spread]), unless one of them obtains the lock
// meanwhile. A nil wt waits for the timer alone. It returns ctx's error, or
// [ErrDone] when done closes.
//
// When last followed a release a node announced, the release may not have
// run on a majority yet: the nodes that announce it run it at the same time
// as the others, not after them, and the rest follow within the releaser's
// node timeout. So Wait ends early twice more, unless another client's
// grant is announced meanwhile: see [Watcher.recheck]. The waker's own
// wake-up after a subscription was made again starts no rechecks: no node
// announced anything.
//
// When a wake-up or a recheck ends the wait, timer is stopped and drained,
// so that its next Reset starts a full wait.
func (wt *Watcher) Wait(ctx context.Context, done <-chan struct{}, timer *time.Timer, last Attempt) error {
	wake := wt.Woken()
	var spread *time.Timer
	defer func() {
		if spread != nil {
			spread.Stop()
		}
	}()
	var rechecked <-chan time.Time
	recheck, granted := wt.recheck(last)
	if recheck != nil {
		defer recheck.Stop()
		rechecked = recheck.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return ErrDone
		case <-timer.C:
			wt.settled()
			return nil
		case <-rechecked:
			stopTimer(timer)
			return nil
		case <-granted:
			if wt.othersGranted() {
				// Another client obtained the lock: wait for its release.
				rechecked, granted = nil, nil
				wt.settled()
			}
			continue
		case <-wake:
		}
		wt.heard()
		d := wt.spread(last.Took)
		if d == 0 {
			stopTimer(timer)
			return nil
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
			wt.settled()
			stopTimer(spread)
		}
	}
}

// heard records a wake-up as Wait receives it: a grant announced before
// it is forgotten, since the release came after; and when a node announced
// the release, its rechecks start from now. Grants are counted from the
// first wake-up of a series of rechecks, against the own grants of every
// attempt since: a wake-up during the series keeps counting, since the
// grants of the attempts before it may still arrive.
func (wt *Watcher) heard() {
	select {
	case <-wt.taken:
	default:
	}
	if !wt.announced.Swap(false) {
		wt.settled()
		return
	}
	if wt.settling.IsZero() {
		wt.grantsBefore, wt.ownGrants = wt.grants.Load(), 0
	}
	wt.settling, wt.rechecks = time.Now(), 0
}

// settled ends the rechecks of the last announced release, if any.
func (wt *Watcher) settled() {
	if wt != nil {
		wt.settling = time.Time{}
	}
}

// recheck returns the timer that ends a wait early after last, refused
// after an announced release, and the channel on which a grant announced
// by another client cancels it; nil and nil when there is none.
//
// There are two rechecks per announced release: the first after twice the
// attempt's time (at least [minRecheck]), by when a release that reached
// the announcing nodes has mostly reached the others; the second when
// last.Settle has passed since the announcement, by when it has reached
// them all. Another client's grant heard since the release ends them:
// grants heard beyond the attempts' own, which their nodes may announce
// too. So an announced release costs a waiter two attempts more at most.
func (wt *Watcher) recheck(last Attempt) (*time.Timer, <-chan struct{}) {
	if wt == nil || wt.settling.IsZero() {
		return nil, nil
	}
	left := last.Settle - time.Since(wt.settling)
	wt.rechecks++
	wt.ownGrants += int64(last.Own)
	switch {
	case left <= 0 || wt.rechecks > 2 || wt.othersGranted():
		wt.settled()
		return nil, nil
	case wt.rechecks == 1:
		return time.NewTimer(min(max(2*last.Took, minRecheck), left)), wt.taken
	default:
		return time.NewTimer(left), wt.taken
	}
}

// othersGranted reports whether more grants were heard since the series of
// rechecks began than its attempts' own.
func (wt *Watcher) othersGranted() bool {
	return wt.grants.Load()-wt.grantsBefore > wt.ownGrants
}

// minRecheck is the least wait of the first [Watcher.recheck].
const minRecheck = time.Millisecond

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
