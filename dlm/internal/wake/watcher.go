package wake

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Watcher is one waiting call's interest in its keys' channels, from
// [Waker.Watch]. Its methods are for the one call that waits; a nil
// *Watcher (no Waker, or none yet) hears nothing.
type Watcher struct {
	w     *Waker
	chans []string
	id    string        // waiter id for targeted wakes; "" wakes on any
	c     chan struct{} // receives a value when a channel hears a release
	taken chan struct{} // receives a value when a channel hears a grant
	// listening is how many clients listened on the channel of the last
	// release heard, by the node's count; 0 when the release did not say.
	listening atomic.Int64
	// announced is set when a node announces a release meant for the
	// watcher, and read by the wake-up's Wait: the waker's own wake-up,
	// after a subscription was made again, leaves it unset.
	announced atomic.Bool
	// grants counts the grants heard.
	grants atomic.Int64
	// settling is when the release of the last wake-up was announced, while
	// its rechecks last (zero otherwise); rechecks is how many were made
	// since; grantsBefore is grants when the series began, ownGrants the
	// grants its attempts may have announced themselves. Only the waiting
	// call reads and writes them, in Wait.
	settling     time.Time
	rechecks     int
	grantsBefore int64
	ownGrants    int64
}

// Woken returns the channel that receives a value when a release meant
// for wt is heard; nil, which blocks, for a nil wt.
func (wt *Watcher) Woken() <-chan struct{} {
	if wt == nil {
		return nil
	}
	return wt.c
}

// Taken returns the channel that receives a value when a grant is heard;
// nil, which blocks, for a nil wt.
func (wt *Watcher) Taken() <-chan struct{} {
	if wt == nil {
		return nil
	}
	return wt.taken
}

// Ready waits until every node has confirmed the watcher's channels (or
// failed to), for at most bound or until ctx ends; a release published
// after that wakes the watcher.
func (wt *Watcher) Ready(ctx context.Context, bound time.Duration) {
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for _, ch := range wt.chans {
		wt.w.mu.Lock()
		ready := wt.w.chans[ch].ready
		wt.w.mu.Unlock()
		select {
		case <-ready:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Drain forgets a wake-up already received, before a new attempt.
func (wt *Watcher) Drain() {
	if wt == nil {
		return
	}
	wt.announced.Store(false)
	select {
	case <-wt.c:
	default:
	}
}

// Stop ends the watcher's interest; channels nobody watches linger for
// [Linger] before they are unsubscribed.
func (wt *Watcher) Stop() {
	if wt == nil {
		return
	}
	now := time.Now()
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	for _, ch := range wt.chans {
		wc := wt.w.chans[ch]
		delete(wc.watchers, wt)
		if len(wc.watchers) == 0 {
			wc.idle = now
		}
	}
}

// spread returns how long to wait, after a release was announced, before
// trying again: a random share of as many half attempts (each of about
// attempt) as other clients listened for the release, at most maxSpread.
// Every waiter wakes at the same announcement; spread over time, the first
// takes the lock alone, and its grant, announced in turn, sends the others
// back to waiting without a request. Waiting for a release meant for this
// watcher alone (fairness) is not spread. The count comes from whoever
// published the release: whatever it says, the wait is within
// [0, maxSpread).
func (wt *Watcher) spread(attempt time.Duration) time.Duration {
	// Two clients competing at once always leave one with a majority (of
	// the nodes that answer), so spreading starts at three listeners — of
	// which one may be the releaser, still listening for a while.
	listening := min(wt.listening.Load(), maxListening)
	if listening <= 2 || attempt <= 0 {
		return 0
	}
	others := listening - 2
	// Half an attempt: about when a grant is announced to the others. The
	// product is taken only when it is at most 2*maxSpread: no overflow.
	share := maxSpread
	if others <= int64(2*maxSpread/attempt) {
		share = time.Duration(others) * attempt / 2
	}
	if share <= 0 {
		return 0
	}
	return rand.N(share)
}

// maxSpread bounds the wait spread drawn by [Watcher.spread].
const maxSpread = 25 * time.Millisecond
