package dlm

import (
	"sync"
	"time"
)

// validity is how long a held lock may be used, by the local monotonic
// clock, and the signal that it ended ([Lock.Lost]): released by Unlock,
// or lost. It owns the rules by which its end moves and by which the lock
// is known lost; the [Lock] names the lock in the errors and events that
// follow from them. mu guards it and is never held across a round trip, so
// that the end of the validity is signalled on time even while an
// extension is under way.
//
// Invariants, which every path that moves the end keeps (the grant, an
// extension alone or in a batch, a hand-over, Resume):
//   - until never overstates what the nodes hold. It is start +
//     validity(ttl) of the request that set the keys' TTL, start being
//     when that request was sent ([timing.validity]): the grant's, or the
//     latest extension a quorum confirmed within that validity. After a
//     failed extension it is no later than that extension's start +
//     validity(ttl), since nodes whose reply was lost may have applied its
//     TTL ([validity.failed]).
//   - The lock is reported lost — done closed, Do's context cancelled — no
//     later than the loss guard before until, whatever until becomes: an
//     end brought within the guard reports it at once.
//   - Once it ended, released or lost, nothing moves until again: an
//     extension that succeeds after the loss was signalled does not take it
//     back, and none is sent after it ([Lock.extendable]).
type validity struct {
	mu       sync.Mutex
	until    time.Time
	released bool      // Unlock was called
	endedAt  time.Time // when Unlock was called
	lostErr  error     // why the lock is known lost; nil while it is not
	// extendErr is the last extension's failure, nil once one succeeds:
	// the loss at the end of the validity wraps it.
	extendErr error
	// lostAt is when the loss was recorded, while it is still to be
	// reported (see [validity.takeLoss]); zero otherwise.
	lostAt time.Time
	done   chan struct{} // made by signal; nil while nobody asked
	expiry *time.Timer   // reports the loss a guard before until
	onEnd  []func(cause error)
}

// An extension's outcome for the validity, when it failed: whether the
// lock is lost by it, and why.
type failedExtension int

const (
	stillValid failedExtension = iota // the validity stands, or was shortened
	quorumGone                        // too many nodes said the lock is not theirs
	nearEnd                           // what is left is within the loss guard
)

// validUntil is [Lock.Until] with mu held.
func (v *validity) validUntil() time.Time {
	if v.released {
		return v.endedAt
	}
	return v.until
}

// ended reports whether the lock was released or is known lost.
func (v *validity) ended() bool { return v.released || v.lostErr != nil }

// left is how long the lock may still be used at now before it must be
// reported lost: until less the guard.
func (v *validity) left(now time.Time, guard time.Duration) time.Duration {
	return v.until.Sub(now) - guard
}

// arm sets the timer that calls fire a guard before until, once: the end
// of the validity is noticed from then on, whoever waits for it. It
// reports whether the validity is within the guard already: the caller
// reports the loss at once then, rather than from a timer a moment later,
// so that the Lost of a lock past its guard is closed when it returns.
func (v *validity) arm(guard time.Duration, fire func()) (near bool) {
	if v.expiry != nil || v.ended() {
		return false
	}
	left := v.left(time.Now(), guard)
	if left <= 0 {
		return true
	}
	v.expiry = time.AfterFunc(left, fire)
	return false
}

// signal returns the channel [Lock.Lost] returns: closed once the lock
// ended. It is made when first asked for, so that a lock nobody asks does
// not carry one.
func (v *validity) signal() <-chan struct{} {
	switch {
	case v.done != nil:
		return v.done
	case v.ended():
		return closedChan
	}
	v.done = make(chan struct{})
	return v.done
}

// fired is the rule of the timer arm set: it reports whether the lock is
// lost now, its validity within the guard; when it was extended meanwhile,
// the timer is set again.
func (v *validity) fired(guard time.Duration) (near bool) {
	if v.ended() {
		return false
	}
	if left := v.left(time.Now(), guard); left > 0 {
		v.expiry.Reset(left)
		return false
	}
	return true
}

// extendTo records an extension a quorum confirmed within its validity,
// which ends at until: the validity moves there. When the loss was
// signalled meanwhile it stands, and extendTo returns it.
func (v *validity) extendTo(until time.Time, guard time.Duration) error {
	if v.lostErr != nil {
		return v.lostErr
	}
	v.extendErr = nil
	v.until = until
	if v.expiry != nil {
		v.expiry.Reset(v.left(time.Now(), guard))
	}
	return nil
}

// failed records an extension that failed with cause: gone when so many
// nodes said no that a quorum can no longer hold the lock; bound its start
// + validity(ttl), past which nodes whose reply was lost hold it no longer.
// The validity is brought down to bound if it ends later. It returns
// whether the lock is lost by it, which the caller then reports.
func (v *validity) failed(cause error, gone bool, bound time.Time, guard time.Duration) failedExtension {
	if v.ended() {
		return stillValid
	}
	v.extendErr = cause
	switch {
	case gone:
		return quorumGone
	case !bound.Before(v.until):
		return stillValid
	}
	v.until = bound
	left := v.left(time.Now(), guard)
	switch {
	case left <= 0:
		return nearEnd
	case v.expiry != nil:
		v.expiry.Reset(left)
	}
	return stillValid
}

// end records that the lock is no longer held — released when cause is
// nil, lost otherwise — and signals [Lock.Lost]. The first call wins. It
// reports whether it recorded a loss, which is then to be reported (see
// [validity.takeLoss]). No code of the user's runs here but the onEnd
// functions, which only cancel contexts.
func (v *validity) end(cause error) (lost bool) {
	if v.lostErr != nil || (v.released && cause != nil) {
		return false
	}
	if cause != nil {
		v.lostErr, v.lostAt = cause, time.Now()
	}
	if v.expiry != nil {
		v.expiry.Stop()
	}
	if v.done != nil {
		select {
		case <-v.done:
		default:
			close(v.done)
		}
	}
	for _, f := range v.onEnd {
		f(cause)
	}
	v.onEnd = nil
	return cause != nil
}

// takeLoss returns the loss recorded and not reported yet, and when it was
// recorded; the caller reports it once mu is released.
func (v *validity) takeLoss() (at time.Time, err error) {
	at, v.lostAt = v.lostAt, time.Time{}
	if at.IsZero() {
		return at, nil
	}
	return at, v.lostErr
}
