package dlm

import (
	"context"
	"sync"
	"time"
)

// handOverSlice bounds how long a lock may be handed from caller to caller
// within one manager without going back to the nodes: after it, the lock is
// released there, so that other processes' waiters, woken by the release,
// get their chance.
const handOverSlice = 20 * time.Millisecond

// localQueues queues a Manager's own waiting Lock calls on the same keys,
// in arrival order: only the first competes on the nodes, the others wait
// in the process until it has had the lock. Goroutines of one process then
// take turns without splitting the nodes' votes among themselves and
// without sending requests that would be refused, and the next in the queue
// starts the moment the lock is released here.
//
// When the next in the queue can take it, Unlock hands the lock itself over
// instead of releasing it on the nodes: the same secret, the same validity,
// no round trip (see [Lock.handOver] for when).
type localQueues struct {
	mu     sync.Mutex
	queues map[string]*localQueue // by the lock's Redis keys
}

type localQueue struct {
	busy    bool           // a caller competes for the lock or holds it
	holder  *Lock          // the lock, while held
	waiters []*localWaiter // in arrival order
	// since is when the lock was last obtained from the nodes; it has
	// been handed over within the manager since then.
	since time.Time
	// What keeps the queued callers waiting, as last known, for the error
	// of one whose context ends (see [Manager.Lock]): held while a caller
	// of this manager holds the lock; otherwise refused, the QuorumError
	// of the last attempt completed by the caller that competes on the
	// nodes for them (nil before its first).
	held    bool
	refused *QuorumError
}

// localWaiter is a queued caller. At its turn, c receives the lock handed
// over, or nil: compete on the nodes.
type localWaiter struct {
	c chan *handover
	// What a lock handed over must offer: the terms the caller asked for,
	// and this much validity.
	terms       terms
	minValidity time.Duration
}

// terms are what a grant's validity, and its keys' life on the nodes,
// depend on. A lock is handed over only to a caller that asked for the same
// terms: its own grant at the same moment would have set the same TTL on
// the nodes and proved the same validity.
type terms struct {
	ttl          time.Duration
	driftFactor  float64
	nodeTimeout  time.Duration // the loss guard depends on it
	restartGuard time.Duration // which nodes may count toward the quorum
	fencing      bool          // each grant of a fenced lock needs a greater fencing token
	owned        bool          // each grant of a labelled lock stores its label (WithOwner)
}

// terms returns the terms of the locks obtained under c.
func (c *config) terms() terms {
	return terms{ttl: c.ttl, driftFactor: c.driftFactor, nodeTimeout: c.timeout(), restartGuard: c.restartGuard, fencing: c.fencing.on, owned: c.owner != nil}
}

// handover is a held lock handed from one caller to the next: its grant,
// and the end of its validity.
type handover struct {
	grant
	until time.Time
}

// turn is one Lock call's place at the head of its queue, from when it may
// compete on the nodes until the lock it obtained ends.
type turn struct {
	qs   *localQueues
	name string
	left bool // guarded by qs.mu
}

// queueName is the name of the queue for a lock's Redis keys.
func queueName(rkeys []string) string {
	if len(rkeys) == 1 {
		return rkeys[0]
	}
	return keyName(rkeys)
}

// enter returns when it is the caller's turn for the lock on rkeys, with the
// lock handed over by the caller before, or nil when the caller must compete
// on the nodes. It returns an error when ctx ends or done is closed first:
// a *waitError for the lock named key, with the class of what kept the
// caller waiting (see [localQueue.held]). If a lock was handed over all the
// same, it returns it too, and the caller must unlock it.
func (qs *localQueues) enter(ctx context.Context, done <-chan struct{}, cfg *config, key string, rkeys []string) (*turn, *handover, error) {
	t := &turn{qs: qs, name: queueName(rkeys)}
	qs.mu.Lock()
	if qs.queues == nil {
		qs.queues = map[string]*localQueue{}
	}
	q := qs.queues[t.name]
	if q == nil {
		q = &localQueue{}
		qs.queues[t.name] = q
	}
	if !q.busy {
		q.busy = true
		qs.mu.Unlock()
		return t, nil, nil
	}
	w := &localWaiter{c: make(chan *handover, 1), terms: cfg.terms(), minValidity: cfg.validity(cfg.ttl) / 2}
	q.waiters = append(q.waiters, w)
	holder := q.holder
	qs.mu.Unlock()
	if holder != nil {
		// A holder that never unlocks must not keep the queue waiting past
		// its validity.
		holder.watchValidity()
	}
	var why error
	select {
	case h := <-w.c:
		return t, h, nil
	case <-ctx.Done():
		why = ctx.Err()
	case <-done:
		why = ErrClosed
	}
	qs.mu.Lock()
	err := &waitError{what: opLock, key: key, why: why, queued: true, held: q.held, last: q.refused}
	select {
	case h := <-w.c: // our turn came meanwhile: the caller leaves it
		qs.mu.Unlock()
		if h == nil {
			t.leave()
			return nil, nil, err
		}
		return t, h, err
	default:
	}
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			break
		}
	}
	qs.mu.Unlock()
	return nil, nil, err
}

// hold records that the turn's caller holds l, obtained from the nodes
// unless handed over; the turn is left when l ends (see [Lock.end] and
// [Lock.Unlock]).
func (t *turn) hold(l *Lock, handedOver bool) {
	l.turn = t
	waiting := false
	t.qs.mu.Lock()
	if q := t.qs.queues[t.name]; q != nil && !t.left {
		q.holder, q.held, q.refused = l, true, nil
		if !handedOver {
			q.since = time.Now()
		}
		waiting = len(q.waiters) > 0
	}
	t.qs.mu.Unlock()
	if waiting {
		// Callers lined up while this one competed: the end of its
		// validity must reach them even if it never unlocks. (Those that
		// come later see the holder and see to it themselves.)
		l.watchValidity()
	}
}

// refused records e, the QuorumError of an attempt that the turn's caller
// completed on the nodes, as what keeps the callers queued behind it
// waiting.
func (t *turn) refused(e *QuorumError) {
	t.qs.mu.Lock()
	defer t.qs.mu.Unlock()
	if q := t.qs.queues[t.name]; q != nil && !t.left {
		q.held, q.refused = false, e
	}
}

// leave gives the turn to the next queued caller, who competes on the
// nodes. Only the first of leave and [Lock.handOver] counts.
func (t *turn) leave() {
	t.qs.mu.Lock()
	defer t.qs.mu.Unlock()
	if t.left {
		return
	}
	t.left = true
	q := t.qs.queues[t.name]
	q.holder = nil
	if len(q.waiters) > 0 {
		next := q.waiters[0]
		q.waiters = q.waiters[1:]
		next.c <- nil
		return
	}
	delete(t.qs.queues, t.name)
}

// handOver gives l, being unlocked, to the next of the manager's callers
// waiting for its keys instead of releasing it on the nodes, and reports
// whether it did; Unlock then must not release l there. lostErr is l's loss
// and expiredFor how long its validity had ended (negative while it lasted),
// both as Unlock found them. Called with l.op held, so that l.until no longer
// changes.
//
// This is the one place that decides. It hands l over only when all of
// these hold:
//
//   - l is not lost and its validity had not ended when Unlock began;
//   - l is not fenced: each grant of a fenced lock needs a greater fencing
//     token from the nodes, and a caller handed l would reuse its token;
//   - l took its turn in the manager's queue ([localQueues]), which a lock
//     from TryLock, from Lock with a retry budget or [WithFairness], a read
//     lock, a permit and a resumed lock never do, and that turn was not
//     left already (l was lost meanwhile);
//   - a caller waits in the queue for these keys;
//   - timeliness: the lock has gone from caller to caller in the manager
//     for no longer than handOverSlice since it was last obtained from the
//     nodes, so that other processes' waiters, woken by a release, get
//     their chance;
//   - the next caller asked for the same terms ([terms]): TTL, drift factor,
//     node timeout (the loss guard depends on it), restart guard (which
//     nodes count toward a quorum), fencing;
//   - no extension of l was ever sent to the nodes ([Lock.extended]),
//     whether it succeeded or failed: a failed one may have been applied by
//     nodes whose reply was lost or came after the caller's context ended,
//     and then the keys live by its TTL, not the grant's, while l's
//     validity stays the grant's (the earlier of the two); so l's keys and
//     its validity are still those its grant gave;
//   - at least half of a fresh grant's validity is left.
//
// Invariant: the receiver then holds no more than its own grant would have
// given: keys set on a quorum with its TTL (less than handOverSlice ago),
// and the validity that grant proves, its TTL less its drift allowance
// ([timing.validity]). Its Until never exceeds what the nodes' TTL proves,
// and the keys never outlive its TTL. A lock that fails any condition is
// released on the nodes, and the next caller competes there on its own
// terms.
func (l *Lock) handOver(lostErr error, expiredFor time.Duration) bool {
	t := l.turn
	if lostErr != nil || expiredFor >= 0 || l.cfg.fencing.on || l.extended || t == nil || l.cfg.owner != nil {
		return false
	}
	t.qs.mu.Lock()
	defer t.qs.mu.Unlock()
	q := t.qs.queues[t.name]
	if t.left || len(q.waiters) == 0 || time.Since(q.since) > handOverSlice {
		return false
	}
	next := q.waiters[0]
	// The same terms mean no fencing either: l.cfg.fencing is false here.
	if next.terms != l.cfg.terms() || time.Until(l.until) < next.minValidity {
		return false
	}
	t.left = true
	q.waiters = q.waiters[1:]
	q.holder = nil
	next.c <- &handover{grant: l.grant, until: l.until}
	return true
}
