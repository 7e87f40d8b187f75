package dlm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// validity is how long a held lock may be used, by the local monotonic
// clock, and the signal that it ended ([Lock.Lost]): released by Unlock,
// or lost. mu guards it and is never held across a round trip, so that the
// end of the validity is signalled on time even while an extension is
// under way.
type validity struct {
	mu       sync.Mutex
	until    time.Time
	released bool      // Unlock was called
	endedAt  time.Time // when Unlock was called
	lostErr  error     // why the lock is known lost; nil while it is not
	// extendErr is the last extension's failure, nil once one succeeds:
	// the loss at the end of the validity wraps it.
	extendErr error
	// lostEvent is the loss end recorded, sent to the hook and logger by
	// unlockMu once mu is released.
	lostEvent *Event
	done      chan struct{}
	expiry    *time.Timer // closes done when the validity ends
	onEnd     []func(cause error)
}

// validUntil is [Lock.Until] with mu held.
func (v *validity) validUntil() time.Time {
	if v.released {
		return v.endedAt
	}
	return v.until
}

// shorten brings the validity down to bound if it ends earlier, and reports
// the lock lost at once if what is left is within the loss guard. Called
// with l.mu held, after a failed extension: nodes whose reply was lost may
// have applied its TTL.
func (l *Lock) shorten(bound time.Time) {
	if !bound.Before(l.until) {
		return
	}
	l.until = bound
	left := time.Until(l.until) - l.cfg.lossGuard()
	switch {
	case left <= 0:
		l.end(l.expiredErr())
	case l.expiry != nil:
		l.expiry.Reset(left)
	}
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// watchExpiry makes sure l.done exists and is closed when the validity
// ends. Called with l.mu held.
func (l *Lock) watchExpiry() {
	if l.done != nil {
		return
	}
	l.done = make(chan struct{})
	if l.released || l.lostErr != nil {
		close(l.done)
		return
	}
	left := time.Until(l.until) - l.cfg.lossGuard()
	if left <= 0 {
		// Report it now rather than from a timer a moment later, so that
		// Lost of a lock past its guard is closed when it returns.
		l.end(l.expiredErr())
		return
	}
	l.expiry = time.AfterFunc(left, l.expire)
}

// expire runs when the validity timer fires.
func (l *Lock) expire() {
	l.mu.Lock()
	defer l.unlockMu()
	if l.released || l.lostErr != nil {
		return
	}
	if left := time.Until(l.until) - l.cfg.lossGuard(); left > 0 { // extended meanwhile
		l.expiry.Reset(left)
		return
	}
	l.end(l.expiredErr())
}

// expiredErr is the loss of a lock whose validity is about to end, or has
// ended, without a successful extension. It wraps the last extension's
// failure, if one failed since the last success. Called with l.mu held.
func (l *Lock) expiredErr() error {
	left := time.Until(l.until).Round(time.Millisecond)
	when := fmt.Sprintf("validity ends in %v", left)
	if left <= 0 {
		when = fmt.Sprintf("validity ended %v ago", -left)
	}
	switch {
	case l.extendErr != nil:
		return fmt.Errorf("dlm: %s %q: %s after a failed extension: %w: %w", l.what(), l.Key(), when, ErrLockLost, l.extendErr)
	case l.cfg.autoExtend != nil:
		return fmt.Errorf("dlm: %s %q: %s and no extension succeeded: %w", l.what(), l.Key(), when, ErrLockLost)
	default:
		return fmt.Errorf("dlm: %s %q: %s (not extended): %w", l.what(), l.Key(), when, ErrLockLost)
	}
}

// end records that the lock is no longer held — released when cause is nil,
// lost otherwise — and signals [Lock.Lost]. Called with l.mu held; the first
// call wins. The loss is sent to the hook and logger by unlockMu, after the
// signal and outside l.mu, so that neither can delay it: no code of the
// user's runs here, not even the logger's Enabled, which emit asks then.
func (l *Lock) end(cause error) {
	if l.lostErr != nil || (l.released && cause != nil) {
		return
	}
	if cause != nil {
		l.lostErr = cause
		l.lostEvent = &Event{Kind: EventLost, Op: opExtend, Key: l.Key(), Start: time.Now(), Token: l.token, Err: cause}
	}
	if l.expiry != nil {
		l.expiry.Stop()
	}
	if l.done != nil {
		select {
		case <-l.done:
		default:
			close(l.done)
		}
	}
	for _, f := range l.onEnd {
		f(cause)
	}
	l.onEnd = nil
	if cause != nil {
		l.leaveTurn() // Unlock leaves it once the keys are deleted
	}
}

// unlockMu releases l.mu, then sends the loss that end recorded, if any, to
// the hook and the logger (emit asks the logger whether it wants it).
func (l *Lock) unlockMu() {
	ev := l.lostEvent
	l.lostEvent = nil
	l.mu.Unlock()
	if ev != nil {
		l.cfg.emit(context.Background(), ev)
	}
}

// watchValidity makes sure the end of the lock's validity is noticed even if
// nobody asked for [Lock.Lost]: a caller waits behind it in the manager.
func (l *Lock) watchValidity() {
	l.mu.Lock()
	l.watchExpiry()
	l.unlockMu()
}
