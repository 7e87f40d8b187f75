package dlm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
)

// Lock is a held lock. Its methods are safe for concurrent use; Extend,
// its auto-extension and Unlock on one Lock are serialized, so an
// extension never overtakes an unlock.
//
// A nil *Lock, which a failed [Manager.Lock] returns, is a lock not held,
// and its methods never panic: Unlock and Extend return an error wrapping
// [ErrNotHeld], so a deferred Unlock written before the error check is
// harmless; Lost returns a closed channel, and the accessors zero values.
type Lock struct {
	m     *Manager
	cfg   config
	claim       // what was asked for: the keys and the kind of lock
	grant       // what the nodes gave: the secret, the token
	turn  *turn // the manager's local queue for these keys, if any
	// auto is the lock's auto-extension, nil without one: its place in
	// the manager's extender (autoextend.go).
	auto *autoExtension

	// op serializes the extensions of the lock, Extend's and the
	// extender's, and Unlock, round trips included: an extension never
	// overtakes an unlock, and two extensions of one lock never cross, so
	// that its validity is always that of the TTL the nodes applied last.
	// The extender holds it from when it puts the lock in a batch until
	// the lock's vote is settled, on another goroutine (autoextend.go).
	op sync.Mutex
	// extended records that an extension was sent to the nodes, whatever
	// came of it: the keys may live by its TTL rather than the grant's, so
	// the lock is never handed over (see [Lock.handOver]). Guarded by op.
	extended bool
	// obtained is when the lock was granted to its caller, or handed to it
	// (zero for a lock from Resume): the start of the hold the events
	// report ([Event.Held]). Set before the lock is shared, never after.
	obtained time.Time

	validity // the end of the validity and the signal of the loss
}

// heldFor returns how long l was held at t, 0 when unknown.
func (l *Lock) heldFor(t time.Time) time.Duration {
	if l.obtained.IsZero() {
		return 0
	}
	return t.Sub(l.obtained)
}

// grant is what a quorum of nodes gave a lock, and what the release
// needs: a lock handed over within the manager keeps its grant.
type grant struct {
	secret string
	token  uint64         // fencing token; 0 without fencing
	pend   *round.Pending // acquire requests still due when the lock was obtained
	// waiterID is the id under which the lock waited in the nodes' lines,
	// "" for none: a node that refused it may have handed it a key since,
	// which the release frees.
	waiterID string
	// late has bit i set when node i's acquire request failed: it may
	// still run there after the release, until lateUntil, the acquire's
	// start plus its TTL; the release is then sent again (rerelease.go).
	// due has bit i set when node i's reply was still due at the grant:
	// those of pend, which tells which failed; once pend is let go, any of
	// them may have.
	late, due uint64
	lateUntil time.Time
}

// Key returns the lock's key as given to [Manager.Lock]. For a lock over
// several keys it returns them sorted and joined by commas; "" for a nil
// Lock.
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	return keyName(l.keys)
}

// Keys returns the lock's keys, sorted; nil for a nil Lock.
func (l *Lock) Keys() []string {
	if l == nil {
		return nil
	}
	return append([]string(nil), l.keys...)
}

// Until returns the end of the lock's validity by the local monotonic clock.
// The holder may act on the protected resource only before it.
//
// Until never overstates what the nodes hold: after an extension that
// failed, it is no later than the extension's start plus its TTL less the
// drift allowance, since nodes whose reply was lost may have applied the
// shorter TTL. Once the lock is unlocked, Until is in the past. It is the
// zero time for a nil Lock.
func (l *Lock) Until() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil()
}

// Lost returns a channel that is closed when the lock is released by
// [Lock.Unlock] or known lost: an extension found it gone on a quorum, or its
// validity is about to end without a successful extension. That last signal
// comes a guard interval before [Lock.Until] — a twentieth of the validity,
// at most one node timeout — so the holder has time to stop before the
// validity ends.
//
// Invariant: the channel is closed no later than a guard interval before
// [Lock.Until], whatever Until becomes — a failed extension that shortens
// the validity past the guard closes it at once — and neither a [Hook] nor
// the logger runs before it is closed. A nil Lock's channel is closed.
func (l *Lock) Lost() <-chan struct{} {
	if l == nil {
		return closedChan
	}
	l.mu.Lock()
	l.watchExpiry()
	done := l.signal()
	l.unlockMu()
	return done
}

// Unlock releases the lock on every node: each node deletes the key only if
// it still holds this lock's secret, so a lock that expired and was taken by
// someone else is left alone. It stops auto-extension first.
//
// Unlock runs even if ctx is already done, each node bounded by the node
// timeout, since a lock left behind blocks others until its TTL. Called
// right after the lock was obtained, it first lets the acquire requests
// still under way end (within their own node timeout).
//
// A release is never abandoned: on a node where it failed, and on a node
// whose acquire request had failed (that request may still run there,
// after the release) where it freed nothing, the Manager sends it again in
// the background, at a jittered backoff doubling from the node timeout,
// until the node answers it (or, after a failed acquire, a release frees
// the key), and no longer than the key would have lived anyway. Unlock
// does not wait for these: its outcome and errors are those of its own
// round. Sending a release again is safe, since a node deletes only a key
// that holds this lock's secret; each retried release ends in an
// [EventReleaseRetry], and [Manager.Close] sends each once more and
// retries none after it. A release that succeeded on every node costs
// nothing more.
//
// It returns an error wrapping [ErrLockLost] when the lock was lost or its
// validity had ended before Unlock. A second call returns an error wrapping
// [ErrNotHeld], which does not match ErrLockLost, so a deferred Unlock
// after an explicit one raises no false alarm; so does Unlock on a nil
// Lock, so a deferred Unlock of a lock that was not obtained neither panics
// nor hides the error the caller checks.
func (l *Lock) Unlock(ctx context.Context) error {
	if l == nil {
		return errNilLock("unlock")
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	l.stopExtending()
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return fmt.Errorf("dlm: unlock %s: already unlocked: %w", l.subject(), ErrNotHeld)
	}
	if l.m.life.closed.Load() {
		l.mu.Unlock()
		l.leaveTurn()
		return ErrClosed
	}
	start := time.Now()
	l.released, l.endedAt = true, start
	lostErr := l.lostErr
	expiredFor := start.Sub(l.until)
	keysUntil := l.until.Add(l.cfg.drift(l.cfg.ttl)) // when the keys expire, unless a failed extension set more
	l.validity.end(nil)
	l.mu.Unlock()
	if l.handOver(lostErr, expiredFor) {
		// The next of the manager's callers waiting for these keys holds
		// the lock now, under the same secret: nothing to release.
		l.cfg.emitVote(ctx, &round.Vote{}, Event{Kind: EventReleased, Op: opUnlock, Key: l.Key(), Start: start, Duration: time.Since(start), Held: l.heldFor(l.endedAt)}, l.m.nodes)
		return nil
	}
	late := l.late
	if l.pend != nil {
		// An acquire request still under way could land after the release
		// and leave the key behind until its TTL.
		l.pend.Wait()
		late |= l.pend.Failed()
	} else {
		late |= l.due
	}
	start = time.Now()
	v, req := l.release(ctx)
	l.m.rereleases.afterUnlock(req, &v, late, keysUntil, l.lateUntil)
	l.leaveTurn()
	var err error
	switch {
	case lostErr != nil:
		err = lostErr // the release's own failures are reported as events
	case v.Yes < l.quorum():
		err = l.failure(&v, opUnlock, false)
	case expiredFor >= 0:
		err = fmt.Errorf("dlm: unlock %s: validity had ended %v before: %w", l.subject(), expiredFor.Round(time.Millisecond), ErrLockLost)
	}
	l.cfg.emitVote(ctx, &v, Event{Kind: EventReleased, Op: opUnlock, Key: l.Key(), Start: start, Duration: time.Since(start), Token: l.token, Err: err, Held: l.heldFor(l.endedAt)}, l.m.nodes)
	return err
}

// leaveTurn lets the next of the manager's callers waiting for these keys
// compete for them.
func (l *Lock) leaveTurn() {
	if l.turn != nil {
		l.turn.leave()
	}
}

// stopExtending ends the lock's auto-extension, if any, and waits until
// no round of the extender holds the lock: no extension of it is sent, or
// settles, after stopExtending returns.
func (l *Lock) stopExtending() {
	if l.auto != nil {
		<-l.m.extender.stop(l)
	}
}

// Token returns the lock's fencing token, or 0 when the lock was taken
// without [WithFencing]. Tokens of successive grants of a key strictly
// increase while the nodes keep their counters; they stay below 2^53. It
// is 0 for a nil Lock.
func (l *Lock) Token() uint64 {
	if l == nil {
		return 0
	}
	return l.token
}

// GrantID returns a number that identifies this grant of the lock, or 0
// when the lock was taken without [WithFencing]: send it with the fencing
// token, so that the resource admits a write with a token equal to the
// largest it has seen only from the grant that wrote with it before (see
// [Fence.Admit]). Tokens of different grants are equal only after nodes lost
// their counters; the id keeps such grants apart. It is derived from the
// lock's secret, which it does not reveal, so a lock resumed from its
// [Handle] has the same id. It is below 2^53, and never 0 but for a nil
// Lock.
func (l *Lock) GrantID() uint64 {
	if l == nil || l.token == 0 {
		return 0
	}
	return grantID(l.secret)
}

// Shared reports whether l is a read lock ([Manager.RLock]) or a
// semaphore's permit ([Semaphore.Acquire]), which others hold at the same
// time, rather than a mutex or write lock. It is false for a nil Lock.
func (l *Lock) Shared() bool { return l != nil && l.kind != nil }

// errNilLock is the error of op on a nil *Lock: not held.
func errNilLock(op string) error {
	return fmt.Errorf("dlm: %s: nil *Lock (not obtained): %w", op, ErrNotHeld)
}

// closedChan is the channel of a lock that ended: closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
