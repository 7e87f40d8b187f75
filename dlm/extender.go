package dlm

import (
	"context"
	"errors"
	"sync"
	"time"
)

// extender keeps a manager's auto-extended locks extended, from one
// goroutine for all of them: a queue of the locks ordered by when each
// one's next extension is due, and rounds ([sweep]) that send the
// extensions due together, in batches, one script call per node for up to
// batchEntries locks. It replaces a goroutine and a timer per lock, whose
// cost grew with the locks held until, past what the process could
// schedule in time, extensions came late and most locks were lost at once.
//
// Under load it degrades in order: a round takes the extensions due, up
// to maxRound, and sends them nearest to the end of their validity first;
// one whose start is late by more than half the margin its schedule left
// it before its lock's loss guard is reported ([EventRenewal] with
// [ErrRenewalBehind]) before that lock can be lost, and so is a batch that
// a node is slow to take or leaves unanswered (see [sweep.stall]).
//
// The goroutine is one of the manager's (Manager.Close stops it and waits
// for it), started with the first auto-extended lock. A zero extender is
// not usable; see newExtender.
type extender struct {
	m     *Manager
	epoch time.Time // the extender's clock counts ns from it
	wake  chan struct{}
	// entries and keys bound a batch: batchEntries and batchKeys, but in
	// tests.
	entries, keys int
	// lockstep, for tests, draws no jitter: locks taken together are
	// extended together.
	lockstep bool
	// released, for tests, is called once a round is done with a lock,
	// before it queues it again or stops it.
	released func(*Lock)

	mu      sync.Mutex
	queue   extQueue
	stopped int // stale items in the queue (see [extQueue])
	running bool
	// sleepUntil is when the goroutine means to wake, on the extender's
	// clock; a lock scheduled sooner wakes it.
	sleepUntil int64
	lastRound  int64 // when the last round started
	// lastBehind is when a round was last reported behind: at most one a
	// second is, to keep a sustained overload from flooding the log.
	lastBehind int64

	// Admission (admission.go): the renewals a second owed by the locks
	// kept extended, and reserved by calls taking one; those locks in the
	// order they were admitted, with dropped stopped ones among them; and
	// the time the extender's own rounds take per renewal.
	owed, reserved float64
	admitted       []*autoExtension
	dropped        int
	meter          costMeter
	// warn aggregates the Warn lines of auto-extension (warnlog.go).
	warn warnLog
}

// Rounds and batches.
const (
	// gatherWindow is how far apart rounds are, unless an extension is
	// due sooner, so that they gather the extensions due close together:
	// an extension may go up to half of it earlier or later than its
	// jittered time, within the tenth of its wait that the jitter takes
	// (see [autoExtension.nextExtension]).
	gatherWindow = 20 * time.Millisecond
	// batchEntries and batchKeys bound a batch, one script call to one
	// node: a few hundred locks keep a node's script run well under a
	// millisecond, so that the other requests waiting on it are not held
	// up, while the cost of a call is shared by many locks.
	batchEntries = 256
	batchKeys    = 1024
	// maxRound bounds the extensions a round takes, so that the first
	// batches go out while the rest is still due, under overload too.
	maxRound = 16 * batchEntries
	// compactFrom is how many stale items the queue may hold, at least,
	// before it is compacted: up to half of it.
	compactFrom = 64
)

func newExtender(m *Manager) *extender {
	x := &extender{m: m, epoch: time.Now(), wake: make(chan struct{}, 1), entries: batchEntries, keys: batchKeys}
	for _, n := range m.nodes {
		n.sender = newNodeSender(x, n.i)
	}
	return x
}

// clock returns t on the extender's clock.
func (x *extender) clock(t time.Time) int64 { return int64(t.Sub(x.epoch)) }

// start starts the auto-extension of l, freshly obtained, as a asks;
// ctx is what [autoExtension] keeps of the context of the call that took
// it. The lock's validity is watched from now on, so that its loss is
// signalled even if nobody asked for [Lock.Lost].
func (x *extender) start(ctx context.Context, l *Lock, a AutoExtend) {
	if a.Remaining == 0 {
		a.Remaining = defaultRemaining
	}
	ae := &autoExtension{l: l, ctx: ctx, remaining: a.Remaining, maxHold: a.MaxHold, state: autoIdle}
	l.auto = ae
	x.mu.Lock()
	x.counted(ae)
	x.mu.Unlock()
	l.watchValidity()
	now := time.Now()
	ae.obtained = now
	if l.cfg.extendWithCtx {
		ae.unhook = context.AfterFunc(ctx, func() { x.stop(l) })
	}
	wait, early, late := ae.nextExtension(now)
	x.schedule(ae, now, wait, early, late)
}

// schedule queues a's next extension wait after now, or up to early
// sooner or late later with a round of others, unless its extension was
// stopped or the manager closed, and starts the goroutine if it does not
// run yet. a is in no round ([extender.release]). When an Extend moved the
// lock's validity while a round held it, the time Extend computed from the
// new validity replaces the one given ([extender.moved]).
func (x *extender) schedule(a *autoExtension, now time.Time, wait, early, late time.Duration) {
	x.mu.Lock()
	if a.state != autoIdle || x.m.life.closed.Load() {
		x.mu.Unlock()
		x.stop(a.l)
		return
	}
	at, soonest := x.plan(now, wait, early, late)
	if a.moved {
		at, soonest = a.movedAt, a.movedEarly
		a.moved = false
	}
	x.queueAt(a, at, soonest)
}

// plan returns the times, on the extender's clock, of an extension wait
// after now that may go up to early sooner or late later: the latest a
// round should take it, and the soonest it may.
func (x *extender) plan(now time.Time, wait, early, late time.Duration) (at, soonest int64) {
	planned := x.clock(now) + int64(wait)
	return planned + int64(late), planned - int64(early)
}

// queueAt queues a, due at at and no sooner than soonest, and starts the
// goroutine if it does not run yet, or wakes it if a is due before it
// means to wake. x.mu is held, and queueAt releases it.
func (x *extender) queueAt(a *autoExtension, at, soonest int64) {
	a.at, a.early = at, soonest
	a.state = autoQueued
	first := x.queue.push(a)
	spawn := !x.running
	x.running = true
	poke := first && a.early < x.sleepUntil
	x.mu.Unlock()
	switch {
	case spawn:
		for _, n := range x.m.nodes {
			x.m.life.work.Spawn(n.sender.run)
		}
		x.m.life.work.Spawn(x.run)
	case poke:
		select {
		case x.wake <- struct{}{}:
		default:
		}
	}
}

// moved reschedules the auto-extension of l, whose validity an Extend has
// just moved, with any TTL, from the new validity: as after an extension
// of its own ([autoExtension.nextExtension]), so that a shorter validity
// is extended in time and a longer one not pointlessly early. A lock
// queued for the time the old validity called for is queued again (its
// item in the queue goes stale); one that a round took, and leaves without
// extending it (it finds op held), is queued by that round for the new
// time ([extender.schedule]). Extend calls it with op held, so that no
// round's extension of l settles, and moves the validity again, between
// the reading of the validity and the queueing.
func (x *extender) moved(l *Lock) {
	a := l.auto
	now := time.Now()
	wait, early, late := a.nextExtension(now)
	at, soonest := x.plan(now, wait, early, late)
	x.mu.Lock()
	switch a.state {
	case autoQueued:
		if at != a.at {
			x.staled(a) // its item, due at a.at
			x.queueAt(a, at, soonest)
			return
		}
	case autoIdle, autoTaken:
		a.moved, a.movedAt, a.movedEarly = true, at, soonest
	}
	x.mu.Unlock()
}

// takeOp takes l's op for Extend, waiting first, as Unlock does (see
// [extender.stop]), on a channel rather than on the mutex while a round
// holds the lock, for up to a round trip: ctx ends the wait, and the
// round's extension settles before Extend sends anything. It returns
// ctx's error when ctx ended first, and then holds nothing.
func (x *extender) takeOp(ctx context.Context, l *Lock) error {
	a := l.auto
	for {
		x.mu.Lock()
		if a.state != autoTaken {
			// No round holds op: Unlock or another Extend may, for which
			// the mutex waits. A round that takes the lock from now on
			// finds op held and leaves it ([extender.entry]).
			locked := l.op.TryLock()
			x.mu.Unlock()
			if !locked {
				l.op.Lock()
			}
			return nil
		}
		if a.released == nil {
			a.released = make(chan struct{})
		}
		done := a.released
		x.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop ends the auto-extension of l, if it has one: it is taken out of the
// queue and never queued again, and under Do the watch of Do's context
// ends. It returns a channel closed once no round holds the lock: at once
// when none does, or when the round it is in is done with it (its
// extension settled, its op released). Unlock waits on it before it takes
// op, on a channel rather than on the mutex, which the round may hold for
// a round trip.
func (x *extender) stop(l *Lock) <-chan struct{} {
	a := l.auto
	x.mu.Lock()
	var wait <-chan struct{} = closedChan
	switch a.state {
	case autoQueued:
		// Left in the queue, stopped, until it comes to the top.
		x.staled(a)
	case autoTaken:
		if a.released == nil {
			a.released = make(chan struct{})
		}
		wait = a.released
	}
	live := a.state != autoStopped
	unhook := a.unhook
	a.state, a.unhook, a.moved = autoStopped, nil, false
	if live {
		x.uncounted(a)
	}
	x.mu.Unlock()
	if unhook != nil {
		unhook()
	}
	return wait
}

// staled counts an item of a that went stale in the queue, and compacts
// the queue when most of it is stale: the compaction drops every item of
// a, which is stopped or queued again after. x.mu is held.
func (x *extender) staled(a *autoExtension) {
	if x.stopped++; x.stopped > len(x.queue)/2 && x.stopped >= compactFrom {
		x.queue.keep(func(it queueItem) bool { return it.a != a && it.current() })
		x.stopped = 0
	}
}

// release records that the round that took a is done with it — it let go
// of the lock's op — and tells a stop or an Extend waiting for that
// ([extender.takeOp]); it is called
// before the round queues the lock again or stops it. From then on a stop
// need not wait.
func (x *extender) release(a *autoExtension) {
	x.mu.Lock()
	if a.state == autoTaken {
		a.state = autoIdle
	}
	if a.released != nil {
		close(a.released)
		a.released = nil
	}
	x.mu.Unlock()
}

// run is the extender's goroutine: it starts a round whenever extensions
// are due, and sleeps until the next one is otherwise. It returns when the
// manager closes.
func (x *extender) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		due, sleep := x.take(now)
		if len(due) > 0 {
			x.sweep(due)
			x.measureRound(now, time.Since(now), len(due))
			x.shed()
			continue
		}
		var fired <-chan time.Time
		if sleep > 0 {
			if !t.Stop() {
				select { // before Go 1.23's timers, a fired timer keeps its tick
				case <-t.C:
				default:
				}
			}
			t.Reset(sleep)
			fired = t.C
		}
		select {
		case <-x.m.life.done:
			return
		case <-x.wake:
		case <-fired:
		}
	}
}

// take takes the extensions a round should start at now, in the order they
// are due, or, when none should, returns how long to sleep (0: until
// woken). A round starts at the latest time of the first extension due, or
// as soon as it may go early but no sooner than gatherWindow after the
// last round; it takes every extension that may go early by then.
func (x *extender) take(now time.Time) ([]*autoExtension, time.Duration) {
	x.mu.Lock()
	defer x.mu.Unlock()
	c := x.clock(now)
	x.dropStale()
	if len(x.queue) == 0 {
		x.sleepUntil = 1<<63 - 1
		return nil, 0
	}
	top := x.queue.top()
	if next := min(top.at, max(top.early, x.lastRound+int64(gatherWindow))); c < next {
		x.sleepUntil = next
		return nil, time.Duration(next - c)
	}
	x.sleepUntil = c
	x.lastRound = c
	var due []*autoExtension
	for len(x.queue) > 0 && x.queue.top().early <= c && len(due) < maxRound {
		a := x.queue.pop()
		a.state = autoTaken
		due = append(due, a)
		x.dropStale()
	}
	return due, 0
}

// dropStale pops the stale items at the top of the queue: of locks whose
// extension stopped, or that an Extend queued again ([extender.moved]).
// x.mu is held.
func (x *extender) dropStale() {
	for len(x.queue) > 0 && !x.queue[0].current() {
		x.queue.pop()
		// Not below zero: a compaction keeps two current items of one
		// lock due at the same time, and counts neither when one goes
		// stale.
		x.stopped = max(x.stopped-1, 0)
	}
}

// after decides what follows the extension of a by ttl, settled with err:
// the next one, a retry while the validity lasts, or the end of a's
// auto-extension.
func (x *extender) after(a *autoExtension, ttl time.Duration, err error) {
	now := time.Now()
	switch {
	case err == nil && ttl < a.l.cfg.ttl:
		// This extension ends the TTL at MaxHold; another would only
		// shorten it, over and over as MaxHold nears.
		a.logMaxHold()
		x.stop(a.l)
	case err == nil:
		wait, early, late := a.nextExtension(now)
		x.schedule(a, now, wait, early, late)
	case errors.Is(err, ErrLockLost), errors.Is(err, ErrClosed), errors.Is(err, ErrNotHeld), a.ctx.Err() != nil:
		x.stop(a.l)
	default:
		// A transient failure: try again while the validity lasts. The
		// expiry timer reports the loss if none succeeds.
		if wait, late, ok := a.retryWait(now); ok {
			x.schedule(a, now, wait, 0, late)
		} else {
			x.stop(a.l)
		}
	}
}

// extQueue is the extender's queue: a binary heap of the locks waiting for
// their next extension, by when it is due. Each item keeps that time beside
// the lock, and sifting writes nothing to the locks, so that ordering the
// queue reads no lock: with hundreds of thousands of locks, each read would
// be a cache miss. An item that no longer stands for its lock's next
// extension — the lock's extension stopped, or an Extend queued it again
// for another time — stays in the queue, stale, until it comes to the top
// or the queue is compacted (see [extender.stop], [extender.moved]).
type extQueue []queueItem

// queueItem is a lock in the queue, and when its extension is due.
type queueItem struct {
	at int64
	a  *autoExtension
}

// current reports whether it stands for its lock's next extension: the
// lock is queued, for its time. Two items of one lock due at the same time
// are the same extension: the first popped takes the lock, which leaves
// the other stale.
func (it queueItem) current() bool { return it.a.state == autoQueued && it.a.at == it.at }

// top returns the lock due first; the queue is not empty.
func (q extQueue) top() *autoExtension { return q[0].a }

// push adds a, due at a.at, and reports whether it is now the first due.
func (q *extQueue) push(a *autoExtension) bool {
	*q = append(*q, queueItem{a.at, a})
	return q.up(len(*q)-1) == 0
}

// pop removes the lock due first and returns it; the queue is not empty.
func (q *extQueue) pop() *autoExtension {
	h := *q
	a := h[0].a
	last := len(h) - 1
	h[0] = h[last]
	h[last] = queueItem{}
	*q = h[:last]
	if last > 0 {
		q.down(0)
	}
	return a
}

// keep keeps the items for which ok is true, in heap order again.
func (q *extQueue) keep(ok func(queueItem) bool) {
	h := (*q)[:0]
	for _, it := range *q {
		if ok(it) {
			h = append(h, it)
		}
	}
	clear((*q)[len(h):])
	*q = h
	for i := len(h)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// up moves the item at i up to its place, which it returns.
func (q extQueue) up(i int) int {
	it := q[i]
	for i > 0 {
		p := (i - 1) / 2
		if q[p].at <= it.at {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = it
	return i
}

func (q extQueue) down(i int) {
	it := q[i]
	n := len(q)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && q[r].at < q[c].at {
			c = r
		}
		if it.at <= q[c].at {
			break
		}
		q[i] = q[c]
		i = c
	}
	q[i] = it
}
