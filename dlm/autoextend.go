package dlm

import (
	"context"
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
	// trip (but not before half the wait), and up to a tenth earlier for
	// jitter.
	Remaining float64
	// MaxHold caps the total time the lock is held by extension, counted
	// from when it was obtained: the last extension ends the TTL at the
	// cap, and the lock then expires. Zero means no cap.
	MaxHold time.Duration
}

// defaultRemaining is the share of the validity left when an extension
// starts by default.
const defaultRemaining = 1.0 / 3

// WithAutoExtend keeps a lock taken by [Manager.Lock], [Manager.TryLock],
// their multi-key forms or [Manager.Resume] extended in the background, each
// time by the lock's TTL, until [Lock.Unlock], the loss of the lock,
// [AutoExtend.MaxHold], or [Manager.Close]. A [Lock.Extend] in between
// sets the keys' TTL until the next extension, which it reschedules from
// the validity it leaves. The context given to the call
// that took the lock bounds only the wait for it: cancelling it once the
// call returned does not stop extension, so
//
//	ctx, cancel := context.WithTimeout(ctx, time.Second)
//	l, err := m.Lock(ctx, "leader", dlm.WithAutoExtend(dlm.AutoExtend{}))
//	cancel()
//
// keeps the lock until it is unlocked or lost. ([Manager.Do] is the
// exception: cancelling its context cancels fn, stops extension, and
// releases the lock once fn returns.) Failed extensions are retried while
// the validity lasts, and none is attempted once it has ended, since that
// could revive a lock another client holds by now. [Lock.Lost] says when
// the lock is gone. [Manager.Do] turns it on.
//
// A Manager extends all its auto-extended locks — mutexes, read locks,
// permits, leaderships — from one goroutine, not one per lock: it sends the
// extensions that are due together, to each node in batches of up to 256
// locks per request (on a Redis Cluster node, per hash slot), so that one
// process can hold hundreds of thousands of locks. Each lock's extension is
// still its own: counted, decided and reported (an [EventExtended] or
// [EventExtendFailed] for each) as [Lock.Extend] does, with its validity
// counted from when its batch was sent. A batch waits for a node half the
// time its locks have left to send an extension, at least the node timeout:
// a reply counts until the validity it would give ends. When the
// extensions fall behind, the nearest to the end of their validity go
// first, and the Manager reports it ([EventRenewal]) before any lock is
// lost.
//
// A Manager admits no more auto-extended locks than it measured it can
// keep extended: the call refuses the lock with an error wrapping
// [ErrOverloaded], before it sends anything to the nodes, when the
// renewals owed, the new lock's included, would take more than 70% of the
// renewals a second its rounds were measured to manage (at the quorum's
// node); before the first rounds are measured, every lock is admitted.
// An admitted lock is not lost to the Manager's own slowness while the
// nodes answer as they did when it was admitted. If they slow down after,
// past what it owes, the Manager lets go of its newest auto-extended locks,
// each lost at once with an error wrapping ErrOverloaded and [ErrLockLost],
// until it owes 85% of what it can renew: never all of them together.
// Failures of auto-extensions are logged at Warn at most once a second per
// node, and once a second for the Manager, with their counts; the hook
// gets each one.
func WithAutoExtend(a AutoExtend) Option {
	return optionFunc(func(c *config) { c.autoExtend = &a })
}

// extension is how a lock is kept extended: [WithAutoExtend]'s settings,
// and whether the extension ends with the call's context.
type extension struct {
	autoExtend *AutoExtend // nil: off
	// extendWithCtx ends auto-extension with the context of the call that
	// took the lock, as Do wants; otherwise it outlives that context.
	extendWithCtx bool
}

// validate checks WithAutoExtend's settings, when given.
func (e *extension) validate() error {
	if e.autoExtend == nil {
		return nil
	}
	return e.autoExtend.validate()
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

// autoExtension is an auto-extended lock's place in its manager's
// extender: what it was asked for, and when its next extension is due.
// The extender's mu guards its state, queue position and times.
type autoExtension struct {
	l *Lock
	// ctx is the context of the call that took the lock, without its
	// cancellation but under Do: its values go with the lock's events,
	// and under Do its end ends the extension, as the goroutine of each
	// lock that the extender replaces kept them.
	ctx       context.Context
	remaining float64
	maxHold   time.Duration
	// rate is the renewals a second the lock owes, counted in what its
	// extender owes while it is kept extended (admission.go).
	rate     float64
	obtained time.Time
	// unhook stops Do's watch of its context, nil outside Do.
	unhook func() bool
	// at is the latest a round should take the lock's next extension,
	// early the soonest it may, in ns on the extender's clock: its jittered
	// time, give or take a little (see [autoExtension.nextExtension]).
	at, early int64
	state     autoState
	// moved is set by an Extend that moved the lock's validity while a
	// round held the lock, or was about to queue it again: movedAt and
	// movedEarly are the next extension's times by the new validity, which
	// that round queues the lock for ([extender.moved]).
	moved               bool
	movedAt, movedEarly int64
	// released is closed once a round is done with the lock, for a stop
	// or an Extend that came while the lock was in it (see [extender.stop],
	// [extender.takeOp]); nil otherwise.
	released chan struct{}
}

// autoState is where an auto-extended lock is in its extender.
type autoState uint8

const (
	autoIdle    autoState = iota // in no round and not queued: just started, or a round is done with it
	autoQueued                   // in the queue, waiting for its next extension
	autoTaken                    // taken from the queue into a round, or in flight
	autoStopped                  // extension ended: unlocked, lost, MaxHold, or the manager closed
)

// nextExtension is the wait from now until the next extension of a's lock
// should start: when the given share of the validity remains, but no later
// than two node timeouts before its end, less up to a tenth for jitter.
// When two node timeouts take up most of the validity, it still waits half
// as long as the share alone would have it wait: extensions would otherwise
// go back to back, as fast as the nodes answer. early and late are how much
// sooner or later the extension may go with a round of others: each at most
// half the gathering window and an eightieth of the wait, and the
// extension stays within the tenth before its unjittered time.
func (a *autoExtension) nextExtension(now time.Time) (wait, early, late time.Duration) {
	l := a.l
	validity := l.cfg.validity(l.cfg.ttl)
	left := l.Until().Sub(now)
	atShare := left - time.Duration(a.remaining*float64(validity))
	due := max(min(atShare, left-2*l.cfg.timeout()), atShare/2)
	if due <= 0 {
		return 0, 0, 0
	}
	var jitter time.Duration
	if !l.m.extender.lockstep {
		jitter = rand.N(due/10 + 1)
	}
	w := min(gatherWindow/2, due/80)
	return due - jitter, min(w, due/10-jitter), min(w, jitter)
}

// retryWait is the wait before a failed extension is tried again, and
// whether it is: retries come closer as the end nears, but not closer
// than a millisecond, and none once what is left of the validity before
// the loss guard (and half a guard more, for the round trip) is used up.
// late is how much later it may go with a round of others, within what is
// left.
func (a *autoExtension) retryWait(now time.Time) (wait, late time.Duration, ok bool) {
	l := a.l
	left := l.Until().Sub(now) - l.cfg.lossGuard()*3/2
	if left <= 0 {
		return 0, 0, false
	}
	wait = max(jitter(min(l.cfg.timeout(), left/4)), time.Millisecond)
	return wait, min(gatherWindow/2, (left-wait)/2), wait < left
}

// extendTTL is the TTL of a's next extension at now: the lock's, or less
// so that the lock ends at MaxHold; ok is false once MaxHold leaves no
// validity for another extension.
func (a *autoExtension) extendTTL(now time.Time) (ttl time.Duration, ok bool) {
	cfg := &a.l.cfg
	ttl = cfg.ttl
	if a.maxHold > 0 {
		left := a.obtained.Add(a.maxHold).Sub(now)
		if cfg.validity(left) <= 0 {
			return 0, false
		}
		ttl = min(ttl, left)
	}
	return ttl, true
}

// logMaxHold logs that a's lock reached MaxHold: no more extension.
func (a *autoExtension) logMaxHold() {
	a.l.cfg.logger.LogAttrs(a.ctx, slog.LevelInfo, "dlm: auto-extension reached MaxHold",
		slog.String("key", a.l.Key()), slog.Duration("max_hold", a.maxHold))
}
