package adapterkit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// SlowWindow is how long after a request ran past its deadline [Late.Slow]
// reports the node slow.
const SlowWindow = 10 * time.Second

// Late counts a node's late requests, those whose callers stopped waiting
// at their context's end while their connections wait on for the replies,
// so that a request that would otherwise open a connection waits for one of
// them instead. A node whose replies come after its callers' deadlines then
// works on the connections it has: each timed-out request keeps one, and
// while any is late the node opens no more, however many requests come.
// The zero value counts none.
//
// Waiting on for a late reply costs a goroutine per request, which the
// caller hands the request to, about a fifth of an uncontended lock's
// rate: a node does it only while it is slow ([Late.Slow]), and otherwise
// runs its requests on the caller's goroutine, bounded by the socket
// deadline, closing the connection of one that times out, which makes the
// node slow.
type Late struct {
	// slowUntil is when Slow turns false, in Unix nanoseconds.
	slowUntil atomic.Int64

	mu    sync.Mutex
	reqs  map[*lateReq]struct{} // the requests begun and not ended
	freed chan struct{}         // closed when a request ends; nil when none waits
}

// lateReq is a request of Begin: late once its context ended.
type lateReq struct{ ctx context.Context }

// Begin starts a request within ctx; the request counts as late from ctx's
// end until end is called, once its reply or failure has come. It counts
// at the very moment ctx ends, so that a caller that gave up on it and at
// once sends the next request finds it late: the next does not dial
// while this one holds its connection.
func (l *Late) Begin(ctx context.Context) (end func()) {
	r := &lateReq{ctx: ctx}
	l.mu.Lock()
	if l.reqs == nil {
		l.reqs = make(map[*lateReq]struct{})
	}
	l.reqs[r] = struct{}{}
	l.mu.Unlock()
	stop := context.AfterFunc(ctx, l.TimedOut)
	return func() {
		stop()
		l.mu.Lock()
		delete(l.reqs, r)
		if l.freed != nil {
			close(l.freed)
			l.freed = nil
		}
		l.mu.Unlock()
	}
}

// Slow reports whether a request of the node ran past its deadline within
// the last SlowWindow ([Late.TimedOut], or a late request of Begin).
func (l *Late) Slow() bool { return time.Now().UnixNano() < l.slowUntil.Load() }

// TimedOut records a request that ran past its deadline: the node is slow
// for SlowWindow.
func (l *Late) TimedOut() { l.slowUntil.Store(time.Now().Add(SlowWindow).UnixNano()) }

// lateLocked counts the requests begun, not ended, whose context ended.
func (l *Late) lateLocked() int {
	n := 0
	for r := range l.reqs {
		if r.ctx.Err() != nil {
			n++
		}
	}
	return n
}

// Wait returns at once while no request is late or busy reports false (the
// pool has an idle connection); otherwise it waits until a late request
// ends and checks again, and returns ctx's error should ctx end first.
func (l *Late) Wait(ctx context.Context, busy func() bool) error {
	for {
		l.mu.Lock()
		if l.lateLocked() == 0 || !busy() {
			l.mu.Unlock()
			return nil
		}
		if l.freed == nil {
			l.freed = make(chan struct{})
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
