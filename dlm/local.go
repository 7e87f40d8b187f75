package dlm

import (
	"context"
	"sync"
)

// localQueues lines up a Manager's own waiting Lock calls on the same keys,
// in arrival order: only the first competes on the nodes, the others wait
// in the process until it has had the lock. Goroutines of one process then
// take turns without splitting the nodes' votes among themselves and
// without sending requests that would be refused, and the next in line
// starts the moment the lock is released here, with no retry delay.
type localQueues struct {
	mu     sync.Mutex
	queues map[string]*localQueue // by the lock's keys
}

type localQueue struct {
	busy    bool            // a caller competes for the lock or holds it
	holder  *Lock           // the lock, while held
	waiters []chan struct{} // in arrival order; closed at their turn
}

// turn is one Lock call's place at the head of its queue, from when it may
// compete on the nodes until the lock it obtained ends.
type turn struct {
	qs   *localQueues
	name string
	left bool // guarded by qs.mu
}

// enter returns when it is the caller's turn to compete for the lock named
// name, or with an error when ctx ends or done is closed first.
func (qs *localQueues) enter(ctx context.Context, done <-chan struct{}, name string) (*turn, error) {
	t := &turn{qs: qs, name: name}
	qs.mu.Lock()
	if qs.queues == nil {
		qs.queues = map[string]*localQueue{}
	}
	q := qs.queues[name]
	if q == nil {
		q = &localQueue{}
		qs.queues[name] = q
	}
	if !q.busy {
		q.busy = true
		qs.mu.Unlock()
		return t, nil
	}
	ready := make(chan struct{})
	q.waiters = append(q.waiters, ready)
	holder := q.holder
	qs.mu.Unlock()
	if holder != nil {
		// A holder that never unlocks must not keep the queue waiting past
		// its validity.
		holder.watchValidity()
	}
	var err error
	select {
	case <-ready:
		return t, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-done:
		err = ErrClosed
	}
	qs.mu.Lock()
	select {
	case <-ready: // our turn came meanwhile: pass it on
		qs.mu.Unlock()
		t.leave()
		return nil, err
	default:
	}
	for i, c := range q.waiters {
		if c == ready {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			break
		}
	}
	qs.mu.Unlock()
	return nil, err
}

// hold records that the turn's caller obtained l; the turn passes on when l
// ends (see [Lock.end] and [Lock.Unlock]).
func (t *turn) hold(l *Lock) {
	l.turn = t
	t.qs.mu.Lock()
	if q := t.qs.queues[t.name]; q != nil && !t.left {
		q.holder = l
	}
	t.qs.mu.Unlock()
}

// leave gives the turn to the next caller in line. Only the first call
// counts.
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
		close(next)
		return
	}
	delete(t.qs.queues, t.name)
}
