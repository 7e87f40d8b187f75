package dlm

import (
	"context"
	"fmt"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
)

// The extension of a held lock, by Extend or by the manager's extender
// (autoextend.go), and the lock's side of its validity: the rules are the
// validity's (validity.go); here they are applied to the lock, which names
// itself in the errors and events they lead to.

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
//
// On a lock kept by [WithAutoExtend], Extend reschedules the
// auto-extension from the validity it leaves, whatever ttl is and whether
// the extension succeeded: the next extension starts when as much of the
// new validity is left as [AutoExtend.Remaining] asks of the lock's TTL,
// so it comes in time for a shorter validity and not early after a longer
// one, and it extends by the lock's TTL again (ttl lasts until then). A
// ttl too short for that extension to be sent and answered before the
// loss guard (see [Lock.Lost]) loses the lock all the same. An
// auto-extension under way when Extend is called settles first: Extend
// waits for it (ctx ends the wait) before it sends anything, so the
// validity is then Extend's, counted from its start.
//
// Invariant: the validity a caller sees ([Lock.Until]) is never longer
// than what a quorum's keys grant. In the process, extensions of one lock
// never cross: each settles before the next is sent, so the validity
// follows the extension a quorum applied last. The nodes are assumed to
// run one lock's requests in the order they were sent: a renewal whose
// reply was lost, run by a node after a shorter Extend's request, leaves
// that key living longer than the validity, which is safe; a failed
// extension's request run after a longer one's would end the key before
// the validity, which the assumption excludes.
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
	if l.auto == nil {
		l.op.Lock()
	} else if err := l.m.extender.takeOp(ctx, l); err != nil {
		return fmt.Errorf("dlm: extend %s: %w", l.subject(), err)
	}
	defer l.op.Unlock()
	start := time.Now()
	if err := l.extendable(start); err != nil {
		return err
	}
	l.extended = true
	v, _ := l.m.rounds.Poll(ctx, l.extendRequest(&cfg, ttl))
	err := l.settleExtension(ctx, &v, ttl, start, false)
	if err == nil && l.cfg.owner != nil {
		l.touchOwner(ctx)
	}
	if l.auto != nil {
		l.m.extender.moved(l) // with op held: see there
	}
	if qerr, failed := err.(*QuorumError); failed && ctx.Err() != nil {
		return fmt.Errorf("dlm: extend %s: %w (%v)", l.subject(), ctx.Err(), qerr)
	}
	return err
}

// extendable returns why l cannot be extended at now, nil when it can: it
// was unlocked, the manager closed, it is known lost, or its validity has
// ended, which extendable reports as the loss. Called with op held.
func (l *Lock) extendable(now time.Time) error {
	l.mu.Lock()
	var err error
	switch {
	case l.released:
		err = fmt.Errorf("dlm: extend %s: already unlocked: %w", l.subject(), ErrNotHeld)
	case l.m.life.closed.Load():
		err = ErrClosed
	case l.lostErr != nil:
		err = l.lostErr
	case !now.Before(l.until):
		err = fmt.Errorf("dlm: extend %s: validity ended %v ago: %w", l.subject(), now.Sub(l.until).Round(time.Millisecond), ErrLockLost)
		l.lose(err)
	}
	l.unlockMu()
	return err
}

// settleExtension records the outcome of an extension of l by ttl, whose requests
// were sent at start and whose vote is v, and sends its events on ctx: the
// validity moves to start + validity(ttl) when a quorum said yes within it,
// and otherwise follows the rules of a failed extension
// ([validity.failed]). It returns nil, the loss that was signalled while
// the extension was under way (it stands), or the extension's
// [*QuorumError]. Extend and the extender settle every extension here,
// with op held.
func (l *Lock) settleExtension(ctx context.Context, v *round.Vote, ttl time.Duration, start time.Time, byRound bool) error {
	took := time.Since(start)
	q, guard := l.quorum(), l.cfg.lossGuard()
	until, ok := l.cfg.quorumInTime(v, q, ttl, start)
	l.mu.Lock()
	if ok {
		err := l.extendTo(until, guard)
		l.mu.Unlock()
		if err == nil {
			l.extensionEvent(ctx, v, start, took, nil, byRound)
		}
		return err
	}
	qerr := l.failure(v, opExtend, v.Yes >= q)
	switch l.failed(qerr, v.No > len(l.m.nodes)-q, until, guard) {
	case quorumGone:
		l.lose(qerr)
	case nearEnd:
		l.lose(l.expiredErr())
	}
	lostAt, lostErr := l.takeLoss() // sent after the failure it follows from
	l.mu.Unlock()
	l.extensionEvent(ctx, v, start, took, qerr, byRound)
	l.reportLoss(lostAt, lostErr)
	return qerr
}

// extensionEvent sends the EventExtended, or with err the
// EventExtendFailed, of an extension that started at start and took took,
// and its node failures, if anyone listens: with hundreds of thousands of
// locks auto-extended, even building an event nobody wants costs. An
// extension by a round of the extender (byRound) has its Warn lines
// counted by the extender ([warnLog]).
func (l *Lock) extensionEvent(ctx context.Context, v *round.Vote, start time.Time, took time.Duration, err error, byRound bool) {
	kind := EventExtended
	if err != nil {
		kind = EventExtendFailed
	}
	if v.Errs == nil && !l.cfg.wants(ctx, kind, err) {
		return
	}
	ev := Event{Kind: kind, Op: opExtend, Key: l.Key(), Start: start, Duration: took, Token: l.token, Err: err}
	if byRound && l.aggregated() {
		l.roundEvent(ctx, v, ev)
		return
	}
	l.cfg.emitVote(ctx, v, ev, l.m.nodes)
}

// autoExtend starts the lock's auto-extension if its options ask for it.
// ctx, the context of the call that took the lock, bounds only that call's
// wait: extension outlives it (see [WithAutoExtend]), except under Do,
// which ties extension to its own context.
func (l *Lock) autoExtend(ctx context.Context) {
	if l.cfg.autoExtend == nil {
		return
	}
	if !l.cfg.extendWithCtx {
		ctx = context.WithoutCancel(ctx)
	}
	l.m.extender.start(ctx, l, *l.cfg.autoExtend)
}

// lose ends l as lost for cause, and lets the next of the manager's
// callers waiting for its keys compete for them (Unlock lets them once the
// keys are deleted). Called with l.mu held; the loss is reported by
// unlockMu.
func (l *Lock) lose(cause error) {
	if l.validity.end(cause) {
		l.leaveTurn()
	}
}

// watchExpiry makes sure the end of l's validity is noticed: the lock is
// reported lost a guard before it. Called with l.mu held.
func (l *Lock) watchExpiry() {
	if l.arm(l.cfg.lossGuard(), l.expire) {
		l.lose(l.expiredErr())
	}
}

// watchValidity makes sure the end of the lock's validity is noticed even if
// nobody asked for [Lock.Lost]: a caller waits behind it in the manager, or
// the lock is auto-extended.
func (l *Lock) watchValidity() {
	l.mu.Lock()
	l.watchExpiry()
	l.unlockMu()
}

// expire runs when the validity's timer fires.
func (l *Lock) expire() {
	l.mu.Lock()
	if l.fired(l.cfg.lossGuard()) {
		l.lose(l.expiredErr())
	}
	l.unlockMu()
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
	case l.cfg.autoExtend != nil && l.m.life.closed.Load():
		return fmt.Errorf("dlm: %s %q: %s, no longer extended since the manager closed: %w: %w", l.what(), l.Key(), when, ErrLockLost, ErrClosed)
	case l.extendErr != nil:
		return fmt.Errorf("dlm: %s %q: %s after a failed extension: %w: %w", l.what(), l.Key(), when, ErrLockLost, l.extendErr)
	case l.cfg.autoExtend != nil:
		return fmt.Errorf("dlm: %s %q: %s and no extension succeeded: %w", l.what(), l.Key(), when, ErrLockLost)
	default:
		return fmt.Errorf("dlm: %s %q: %s (not extended): %w", l.what(), l.Key(), when, ErrLockLost)
	}
}

// unlockMu releases l.mu, then sends the loss recorded, if any, to the
// hook and the logger: after the signal and outside l.mu, so that neither
// can delay it (emit asks the logger whether it wants it then).
func (l *Lock) unlockMu() {
	at, err := l.takeLoss()
	l.mu.Unlock()
	l.reportLoss(at, err)
}

// reportLoss sends the loss err recorded at at, if err is not nil: that
// of an auto-extended lock counted in its extender's Warn lines
// ([warnLog]).
func (l *Lock) reportLoss(at time.Time, err error) {
	if err != nil && l.aggregated() {
		l.reportAggregated(at, err)
		return
	}
	if err != nil {
		l.cfg.emit(context.Background(), &Event{Kind: EventLost, Op: opExtend, Key: l.Key(), Start: at, Token: l.token, Err: err, Held: l.heldFor(at)})
	}
}
