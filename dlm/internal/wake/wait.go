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
	// Woken says that a wake-up started the attempt (Wait returned true).
	Woken bool
	// Contended says that some nodes granted the attempt, yet it failed:
	// the nodes that named the waiter did hand it their keys, and another
	// key was held still, or a node failed. An attempt that no node granted
	// was started by no real release (a forged one, or a stale one).
	Contended bool
	// Grace bounds how long a waiter that fewer than need nodes named
	// waits for the others: the node timeout, within which a release
	// reaches every node.
	Grace time.Duration
}

// minGap is the least gap between a refused attempt that a wake-up
// started and the next wake-up (see [Watcher.gap]).
const minGap = time.Millisecond

// Wait waits until the next attempt is due, and reports whether nodes
// named the waiter (or announced a release, for a waiter of the broadcast
// channels) to end the wait, rather than timer or a subscription made
// again, which hand the waiter nothing. It returns ctx's error, or
// [ErrDone] when done closes. A nil wt waits for timer alone.
//
// A waiter with an id is woken by the nodes that hand it the lock: when as
// many nodes as it needs (the quorum, or every node whose subscription is
// up when fewer are) have named it since its last attempt began, which is
// when the release reached them and the key is reserved for it there; or
// when Grace has passed since the first of them did, by when a release
// that reached one node has reached every node that will announce it. So
// after a release reaches a quorum, the waiter it names attempts within one
// node timeout whatever the order of the announcements, and one forged
// announcement costs it one attempt at most: a real release costs a waiter
// one attempt beyond its timer's pace, and one more when some nodes granted
// that attempt and it failed all the same (a request of its own earlier
// attempt, or of another client, held a key still, or a node failed): a
// Grace later, the waiter attempts once more, an attempt that no wake-up
// started. When no node granted it (a forged message), it waits for its
// timer. The nodes the release had not reached when the
// waiter woke may still name it: their next message within Grace is taken
// for that release's, not a new one's.
//
// A waiter without an id is woken alike by the releases announced on the
// broadcast channels, once as many nodes as it needs announced one (or
// Grace after the first did), after a spread wait when other clients heard
// it too (see [Watcher.spread]): woken by the first node alone, its attempt
// would often come before the release reached a quorum, and the other
// nodes' announcements of that release are not a new one's.
//
// A waiter with an id widened to the broadcast channels ([Waker.Widen])
// is also woken by one node's announcement of a release there (see
// [Watcher.needed]), but not by one heard before the gap below has passed:
// such a release freed the key for whoever asked first, long taken by the
// gap's end, so the next release after it wakes the waiter instead.
//
// Either way, a wake-up after a refused attempt that a wake-up started
// (a release's, or a subscription made again) comes no sooner than a gap
// after Wait began, which doubles with each such attempt in a row, from a
// millisecond up to Grace: a flood of forged messages, or of subscriptions
// made again, costs a waiter at most one attempt per Grace beyond its
// timer's pace. When a wake-up ends the wait, timer is stopped and
// drained, so that its next Reset starts a full wait.
func (wt *Watcher) Wait(ctx context.Context, done <-chan struct{}, timer *time.Timer, last Attempt) (bool, error) {
	if wt == nil {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-done:
			return false, ErrDone
		case <-timer.C:
			return false, nil
		}
	}
	began := time.Now()
	if last.Woken || wt.rewoken {
		wt.gap = min(max(2*wt.gap, minGap), max(last.Grace, minGap))
	} else {
		wt.gap = 0
	}
	wt.rewoken = false
	var grace *time.Timer
	defer func() {
		if grace != nil {
			grace.Stop()
		}
	}()
	var graceC <-chan time.Time
	retry := last.Woken && last.Contended && wt.id != ""
	if retry {
		// The keys were handed to the waiter, and still the attempt was
		// refused: a request of its own, or another's, still held one of
		// them. Its release, or the rest of the release that woke the
		// waiter, comes within Grace: one attempt more then, which is no
		// wake-up of its own.
		grace = time.NewTimer(last.Grace)
		graceC = grace.C
	}
	if wt.widened {
		wt.heedFrom(began.Add(wt.gap))
	}
	for {
		n, first, resub := wt.named()
		switch need := wt.needed(); {
		case resub || (need > 0 && n >= need):
			at := began.Add(wt.gap)
			if wt.id == "" {
				at = began.Add(max(wt.gap, wt.spread(last.Took)))
			}
			return wt.wake(ctx, done, timer, at, last.Grace)
		case n > 0 && (graceC == nil || retry):
			if grace != nil {
				grace.Stop()
			}
			retry = false
			grace = time.NewTimer(max(time.Until(first.Add(last.Grace)), 0))
			graceC = grace.C
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-done:
			return false, ErrDone
		case <-timer.C:
			return false, nil
		case <-graceC:
			if retry {
				stopTimer(timer)
				return false, nil
			}
			return wt.wake(ctx, done, timer, began.Add(wt.gap), last.Grace)
		case <-wt.c:
		}
	}
}

// wake ends a wait that a wake-up ended, at at: it waits until then unless
// the timer comes first, and stops the timer. It reports whether a
// release woke it (nodes named it), not a subscription made again; then
// the nodes that have not announced the release yet are marked late until
// grace from now (see [Watcher.late]).
func (wt *Watcher) wake(ctx context.Context, done <-chan struct{}, timer *time.Timer, at time.Time, grace time.Duration) (bool, error) {
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-done:
			return false, ErrDone
		case <-timer.C:
			return false, nil
		case <-t.C:
		}
	}
	stopTimer(timer)
	wt.mu.Lock()
	named := wt.nheard > 0 // a release woke it, not a subscription made again
	wt.rewoken = !named
	if named {
		for i, h := range wt.heard {
			wt.late[i] = !h
		}
		wt.lateUntil = time.Now().Add(grace)
	}
	wt.mu.Unlock()
	return named, nil
}

// named returns how many nodes named the waiter since its last attempt
// began, when the first did, and whether a subscription was made again
// meanwhile.
func (wt *Watcher) named() (int, time.Time, bool) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.nheard, wt.first, wt.resub
}

// needed is how many nodes must name the waiter (announce a release, for
// a waiter of the broadcast channels) for a wake-up: its need, or every
// node whose subscription is up when fewer are; 0 when none is. For a
// waiter with an id widened to the broadcast channels ([Waker.Widen]), one
// node that announced a release there is enough: those are the releases of
// the previous release's processes, which two nodes announce at most, at
// the moment they run on every node, and whose own waiters attempt at the
// first announcement. Waiting for a quorum of them, the widened waiter
// would come after those waiters every time, or a Grace after the release.
func (wt *Watcher) needed() int {
	wt.w.mu.Lock()
	need := min(wt.need, wt.w.liveLocked())
	wt.w.mu.Unlock()
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.broadcast && wt.id != "" && need > 0 {
		return 1
	}
	return need
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
