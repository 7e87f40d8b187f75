package dlm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Lock is a held lock. Its methods are safe for concurrent use; Extend and
// Unlock on one Lock are serialized, so an extension never overtakes an
// unlock.
type Lock struct {
	m     *Manager
	cfg   config
	keys  []string // as the caller gave them, sorted for a multi-key lock
	rkeys []string // Redis keys
	token string
	fence uint64   // fencing token; 0 without fencing
	pend  *pending // acquire requests still due when the lock was obtained
	// granted marks the nodes that granted the lock (0 to 63), which
	// announce its release; 0 when not known (Resume).
	granted uint64
	turn    *turn // the manager's local queue for these keys, if any
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
	released bool  // Unlock was called
	lostErr  error // why the lock is known lost; nil while it is not
	done     chan struct{}
	expiry   *time.Timer // closes done when the validity ends
	onEnd    []func(cause error)
}

// Key returns the lock's key as given to [Manager.Lock]. For a lock over
// several keys it returns them sorted and joined by commas.
func (l *Lock) Key() string { return keyName(l.keys) }

// Keys returns the lock's keys, sorted.
func (l *Lock) Keys() []string { return append([]string(nil), l.keys...) }

// Until returns the end of the lock's validity by the local monotonic clock.
// The holder may act on the protected resource only before it.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Lost returns a channel that is closed when the lock is released by
// [Lock.Unlock] or known lost: an extension found it gone on a quorum, or its
// validity is about to end without a successful extension. That last signal
// comes a guard interval before [Lock.Until] — a twentieth of the validity,
// at most one node timeout — so the holder has time to stop before the
// validity ends.
func (l *Lock) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watchExpiry()
	return l.done
}

// Unlock releases the lock on every node: each node deletes the key only if
// it still holds this lock's token, so a lock that expired and was taken by
// someone else is left alone. It stops auto-extension first.
//
// Unlock runs even if ctx is already done, each node bounded by the node
// timeout, since a lock left behind blocks others until its TTL. Called
// right after the lock was obtained, it first lets the acquire requests
// still under way end (within their own node timeout). It returns an error
// wrapping [ErrLockLost] when the lock was lost or its validity had ended
// before Unlock, and on a second call.
func (l *Lock) Unlock(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	l.stopExtending()
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return fmt.Errorf("dlm: unlock %q: already unlocked: %w", l.Key(), ErrLockLost)
	}
	if l.m.closed.Load() {
		l.mu.Unlock()
		l.passTurn()
		return ErrClosed
	}
	l.released = true
	lostErr := l.lostErr
	expiredFor := time.Since(l.until)
	l.end(nil)
	l.mu.Unlock()
	start := time.Now()
	if lostErr == nil && !l.cfg.fencing && expiredFor < 0 && l.turn != nil && l.turn.handOver(l) {
		// The next of the manager's callers waiting for these keys holds
		// the lock now, under the same token: nothing to release.
		l.cfg.emitVote(ctx, &vote{}, Event{Kind: EventReleased, Op: opUnlock, Key: l.Key(), Start: start, Duration: time.Since(start)}, l.m.addrs)
		return nil
	}
	if l.pend != nil {
		// An acquire request still under way could land after the release
		// and leave the key behind until its TTL.
		l.pend.wait()
	}
	start = time.Now()
	v := l.release(ctx)
	l.passTurn()
	var err error
	switch {
	case lostErr != nil:
		err = lostErr // the release's own failures are reported as events
	case v.yes < l.quorum():
		err = l.failure(&v, opUnlock, false)
	case expiredFor >= 0:
		err = fmt.Errorf("dlm: unlock %q: validity had ended %v before: %w", l.Key(), expiredFor.Round(time.Millisecond), ErrLockLost)
	}
	l.cfg.emitVote(ctx, &v, Event{Kind: EventReleased, Op: opUnlock, Key: l.Key(), Start: start, Duration: time.Since(start), Fence: l.fence, Err: err}, l.m.addrs)
	return err
}

// Extend sets the lock's TTL to ttl from now on every node that still holds
// it. It succeeds when a quorum extended within the new validity, which then
// replaces the old one. It never revives a lock: once the local validity has
// ended it returns an error wrapping [ErrLockLost] without a round trip, and
// nodes whose key expired are not written. When the extension fails for
// other reasons (node errors), the old validity still stands.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
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
		return fmt.Errorf("dlm: extend %q: already unlocked: %w", l.Key(), ErrLockLost)
	case l.m.closed.Load():
		l.mu.Unlock()
		return ErrClosed
	case l.lostErr != nil:
		l.mu.Unlock()
		return l.lostErr
	}
	start := time.Now()
	if !start.Before(l.until) {
		err := fmt.Errorf("dlm: extend %q: validity ended %v ago: %w", l.Key(), start.Sub(l.until).Round(time.Millisecond), ErrLockLost)
		l.end(err)
		l.mu.Unlock()
		return err
	}
	l.mu.Unlock()
	n := len(l.m.nodes)
	v, _ := l.m.poll(ctx, l.extendRequest(&cfg, ttl))
	drift := cfg.drift(ttl)
	ev := Event{Kind: EventExtended, Op: opExtend, Key: l.Key(), Start: start, Duration: time.Since(start), Fence: l.fence}
	if set := ttl.Truncate(time.Millisecond); v.yes >= l.quorum() && set-time.Since(start)-drift > 0 {
		l.mu.Lock()
		lostErr := l.lostErr
		if lostErr == nil {
			l.until = start.Add(set - drift)
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
	qerr := l.failure(&v, opExtend, v.yes >= l.quorum())
	ev.Kind, ev.Err = EventExtendFailed, qerr
	l.cfg.emitVote(ctx, &v, ev, l.m.addrs)
	if v.no > n-l.quorum() {
		l.mu.Lock()
		l.end(qerr) // a quorum no longer holds the token
		l.mu.Unlock()
	}
	if ctx.Err() != nil {
		return fmt.Errorf("dlm: extend %q: %w (%v)", l.Key(), ctx.Err(), qerr)
	}
	return qerr
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
	defer l.mu.Unlock()
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
// ended, without a successful extension. Called with l.mu held.
func (l *Lock) expiredErr() error {
	return fmt.Errorf("dlm: lock %q: validity ends in %v and no extension succeeded: %w",
		l.Key(), time.Until(l.until).Round(time.Millisecond), ErrLockLost)
}

// end records that the lock is no longer held — released when cause is nil,
// lost otherwise — and signals [Lock.Lost]. Called with l.mu held; the first
// call wins.
func (l *Lock) end(cause error) {
	if l.lostErr != nil || (l.released && cause != nil) {
		return
	}
	if cause != nil {
		l.lostErr = cause
		if l.cfg.wants(context.Background(), EventLost, cause) {
			l.cfg.emit(context.Background(), &Event{Kind: EventLost, Op: opExtend, Key: l.Key(), Start: time.Now(), Fence: l.fence, Err: cause})
		}
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
	l.mu.Unlock()
}

// stopExtending stops the watchdog, if any, and waits for it to return.
func (l *Lock) stopExtending() {
	if l.stopWatchdog != nil {
		l.stopWatchdog()
		<-l.watchdogDone
	}
}
