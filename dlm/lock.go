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
	m      *Manager
	cfg    config
	keys   []string // as the caller gave them, sorted for a multi-key lock
	rkeys  []string // Redis keys
	secret string
	fence  uint64         // fencing token; 0 without fencing
	pend   *round.Pending // acquire requests still due when the lock was obtained
	// granted marks the nodes that granted the lock (0 to 63), which
	// announce its release; 0 when not known (Resume).
	granted uint64
	turn    *turn // the manager's local queue for these keys, if any
	// extended records that an extension was sent to the nodes, whatever
	// came of it: the keys may live by its TTL rather than the grant's, so
	// the lock is never handed over (see [Lock.handOver]). Guarded by op.
	extended bool
	// waiter is the id under which the lock waited in the nodes' lines
	// (fairness): nodes that did not grant it may still keep its place,
	// which the release gives up.
	waiter string
	// kind is the shared lease this is (a read lock or a semaphore's
	// permit), nil for the mutex; see lease.go.
	kind *leaseKind

	// watchdog, when auto-extension is on: cancel stops it, done is
	// closed when it has returned.
	stopWatchdog context.CancelFunc
	watchdogDone chan struct{}

	// op serializes Extend and Unlock, round trips included. mu guards the
	// state below and is never held across a round trip, so that the end
	// of the validity is signalled on time even while an extension is
	// under way.
	op       sync.Mutex
	mu       sync.Mutex
	until    time.Time
	released bool      // Unlock was called
	endedAt  time.Time // when Unlock was called
	lostErr  error     // why the lock is known lost; nil while it is not
	// extendErr is the last extension's failure, nil once one succeeds:
	// the loss at the end of the validity wraps it.
	extendErr error
	// lostEvent is the loss end recorded, sent to the hook and logger by
	// unlockMu once l.mu is released.
	lostEvent *Event
	done      chan struct{}
	expiry    *time.Timer // closes done when the validity ends
	onEnd     []func(cause error)
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

// validUntil is Until with l.mu held.
func (l *Lock) validUntil() time.Time {
	if l.released {
		return l.endedAt
	}
	return l.until
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
		l.passTurn()
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
	l.passTurn()
	var err error
	switch {
	case lostErr != nil:
		err = lostErr // the release's own failures are reported as events
	case v.Yes < l.quorum():
		err = l.failure(&v, opUnlock, false)
	case expiredFor >= 0:
		err = fmt.Errorf("dlm: unlock %s: validity had ended %v before: %w", l.subject(), expiredFor.Round(time.Millisecond), ErrLockLost)
	}
	l.cfg.emitVote(ctx, &v, Event{Kind: EventReleased, Op: opUnlock, Key: l.Key(), Start: start, Duration: time.Since(start), Fence: l.fence, Err: err}, l.m.addrs)
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
// Unlock, never handed to the next of the Manager's callers in line (see
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
	ev := Event{Kind: EventExtended, Op: opExtend, Key: l.Key(), Start: start, Duration: time.Since(start), Fence: l.fence}
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
		return fmt.Errorf("dlm: %s %q: %s after a failed extension: %w: %w", l.noun(), l.Key(), when, ErrLockLost, l.extendErr)
	case l.cfg.autoExtend != nil:
		return fmt.Errorf("dlm: %s %q: %s and no extension succeeded: %w", l.noun(), l.Key(), when, ErrLockLost)
	default:
		return fmt.Errorf("dlm: %s %q: %s (not extended): %w", l.noun(), l.Key(), when, ErrLockLost)
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
		l.lostEvent = &Event{Kind: EventLost, Op: opExtend, Key: l.Key(), Start: time.Now(), Fence: l.fence, Err: cause}
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
		l.passTurn() // Unlock passes it once the keys are deleted
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

// passTurn lets the next of the manager's callers waiting for these keys
// compete for them.
func (l *Lock) passTurn() {
	if l.turn != nil {
		l.turn.leave()
	}
}

// watchValidity makes sure the end of the lock's validity is noticed even if
// nobody asked for [Lock.Lost]: a caller waits behind it in the manager.
func (l *Lock) watchValidity() {
	l.mu.Lock()
	l.watchExpiry()
	l.unlockMu()
}

// stopExtending stops the watchdog, if any, and waits for it to return.
func (l *Lock) stopExtending() {
	if l.stopWatchdog != nil {
		l.stopWatchdog()
		<-l.watchdogDone
	}
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
