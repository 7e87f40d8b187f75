package dlm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
)

// Lock is a held lock. Its methods are safe for concurrent use; Extend and
// Unlock on one Lock are serialized, so an extension never overtakes an
// unlock.
//
// A nil *Lock, which a failed [Manager.Lock] returns, is a lock not held,
// and its methods never panic: Unlock and Extend return an error wrapping
// [ErrNotHeld], so a deferred Unlock written before the error check is
// harmless; Lost returns a closed channel, and the accessors zero values.
type Lock struct {
	m        *Manager
	cfg      config
	claim          // what was asked for: the keys and the kind of lock
	grant          // what the nodes gave: the secret, the token, who granted
	turn     *turn // the manager's local queue for these keys, if any
	watchdog watchdog

	// op serializes Extend and Unlock, round trips included.
	op sync.Mutex
	// extended records that an extension was sent to the nodes, whatever
	// came of it: the keys may live by its TTL rather than the grant's, so
	// the lock is never handed over (see [Lock.handOver]). Guarded by op.
	extended bool

	validity // the end of the validity and the signal of the loss
}

// grant is what a quorum of nodes gave a lock, and what the release
// needs: a lock handed over within the manager keeps its grant.
type grant struct {
	secret string
	token  uint64 // fencing token; 0 without fencing
	// granted marks the nodes that granted the lock (0 to 63), which
	// announce its release; 0 when not known (Resume).
	granted uint64
	pend    *round.Pending // acquire requests still due when the lock was obtained
	// waiterID is the id under which the lock waited in the nodes' lines,
	// "" for none: a node that refused it may have handed it a key since,
	// which the release frees.
	waiterID string
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
	done := l.done
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
// still under way end (within their own node timeout). It returns an error
// wrapping [ErrLockLost] when the lock was lost or its validity had ended
// before Unlock. A second call returns an error wrapping [ErrNotHeld], which
// does not match ErrLockLost, so a deferred Unlock after an explicit one
// raises no false alarm; so does Unlock on a nil Lock, so a deferred
// Unlock of a lock that was not obtained neither panics nor hides the
// error the caller checks.
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
	if l.m.closed.Load() {
		l.mu.Unlock()
		l.leaveTurn()
		return ErrClosed
	}
	start := time.Now()
	l.released, l.endedAt = true, start
	lostErr := l.lostErr
	expiredFor := start.Sub(l.until)
	l.end(nil)
	l.unlockMu()
	if l.handOver(lostErr, expiredFor) {
		// The next of the manager's callers waiting for these keys holds
		// the lock now, under the same secret: nothing to release.
		l.cfg.emitVote(ctx, &round.Vote{}, Event{Kind: EventReleased, Op: opUnlock, Key: l.Key(), Start: start, Duration: time.Since(start)}, l.m.addrs)
		return nil
	}
	if l.pend != nil {
		// An acquire request still under way could land after the release
		// and leave the key behind until its TTL.
		l.pend.Wait()
	}
	start = time.Now()
	v := l.release(ctx)
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
	l.cfg.emitVote(ctx, &v, Event{Kind: EventReleased, Op: opUnlock, Key: l.Key(), Start: start, Duration: time.Since(start), Token: l.token, Err: err}, l.m.addrs)
	return err
}

// Extend sets the lock's TTL to ttl from now on every node that still holds
// it. It succeeds when a quorum extended within the new validity, which then
// replaces the old one. It never revives a lock: once the local validity has
// ended it returns an error wrapping [ErrLockLost] without a round trip, and
// nodes whose key expired are not written.
//
// When the extension fails for other reasons (node errors, timeouts, a
// quorum that answered too late), the nodes whose reply was lost may have
// applied ttl all the same. Invariant: the validity then becomes the earlier
// of the old one and start + ttl − drift (ttl in whole milliseconds, as the
// nodes apply it, start when the extension was sent), and if that leaves
// less than the loss guard, the lock is reported lost at once ([Lock.Lost]).
// Either way, a lock Extend sent requests for is released on the nodes at
// Unlock, never handed to the next of the Manager's queued callers (see
// [Manager.Lock]): its keys may live by ttl, not by that caller's TTL.
// After [Lock.Unlock], and on a nil Lock, Extend returns an error wrapping
// [ErrNotHeld].
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if l == nil {
		return errNilLock("extend")
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	cfg := l.cfg
	cfg.ttl = ttl
	if err := cfg.validate(); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	switch {
	case l.released:
		l.mu.Unlock()
		return fmt.Errorf("dlm: extend %s: already unlocked: %w", l.subject(), ErrNotHeld)
	case l.m.closed.Load():
		l.mu.Unlock()
		return ErrClosed
	case l.lostErr != nil:
		l.mu.Unlock()
		return l.lostErr
	}
	start := time.Now()
	if !start.Before(l.until) {
		err := fmt.Errorf("dlm: extend %s: validity ended %v ago: %w", l.subject(), start.Sub(l.until).Round(time.Millisecond), ErrLockLost)
		l.end(err)
		l.unlockMu()
		return err
	}
	l.mu.Unlock()
	l.extended = true
	n := len(l.m.nodes)
	v, _ := l.m.rounds.Poll(ctx, l.extendRequest(&cfg, ttl))
	ev := Event{Kind: EventExtended, Op: opExtend, Key: l.Key(), Start: start, Duration: time.Since(start), Token: l.token}
	until, ok := cfg.quorumInTime(&v, l.quorum(), ttl, start)
	if ok {
		l.mu.Lock()
		lostErr := l.lostErr
		if lostErr == nil {
			l.extendErr = nil
			l.until = until
			if l.expiry != nil {
				l.expiry.Reset(time.Until(l.until) - l.cfg.lossGuard())
			}
		}
		l.mu.Unlock()
		if lostErr != nil {
			// The validity ran out while the extension was under way, and
			// the loss was signalled: it stands.
			return lostErr
		}
		l.cfg.emitVote(ctx, &v, ev, l.m.addrs)
		return nil
	}
	qerr := l.failure(&v, opExtend, v.Yes >= l.quorum())
	l.mu.Lock()
	if l.lostErr == nil && !l.released {
		l.extendErr = qerr
		if v.No > n-l.quorum() {
			l.end(qerr) // a quorum no longer holds the secret
		} else {
			l.shorten(until)
		}
	}
	lost := l.lostEvent // sent after the failure it follows from
	l.lostEvent = nil
	l.mu.Unlock()
	ev.Kind, ev.Err = EventExtendFailed, qerr
	l.cfg.emitVote(ctx, &v, ev, l.m.addrs)
	if lost != nil {
		l.cfg.emit(context.Background(), lost)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("dlm: extend %s: %w (%v)", l.subject(), ctx.Err(), qerr)
	}
	return qerr
}

// leaveTurn lets the next of the manager's callers waiting for these keys
// compete for them.
func (l *Lock) leaveTurn() {
	if l.turn != nil {
		l.turn.leave()
	}
}

// stopExtending stops the watchdog, if any, and waits for it to return.
func (l *Lock) stopExtending() {
	l.watchdog.halt()
}

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
