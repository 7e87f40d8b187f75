package wake

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Watcher is one waiting call's interest in its keys' channels, from
// [Waker.Watch]. Its methods are for the one call that waits; a nil
// *Watcher (no Waker, or none yet) hears nothing.
type Watcher struct {
	w *Waker
	// chans are the channels wt listens on; [Waker.Widen] adds to them
	// under w.mu, on the waiting call's goroutine, which alone reads them
	// without it.
	chans []string
	id    string // the waiter's id; "" for a watcher of the broadcast channels
	need  int    // how many nodes must name the waiter (see Wait)
	// widened says that a waiter with an id hears the broadcast channels
	// too (see [Waker.Widen]). Only the waiting call reads and writes it.
	widened bool
	// c receives a value when anything is heard that may end a wait.
	c chan struct{}
	// listening is how many clients listened on the broadcast channel of
	// the last release heard, by the node's count; 0 when the release did
	// not say.
	listening atomic.Int64

	// What the nodes said of a waiter with an id since its last attempt
	// began (Drain): heard marks the nodes that named it, nheard counts
	// them, first is when the first did; resub says that a subscription was
	// made again meanwhile, so a release may have gone unheard.
	mu     sync.Mutex
	heard  []bool
	nheard int
	first  time.Time
	resub  bool
	// broadcast says that a node announced a release on a broadcast
	// channel since the last attempt began (see [Watcher.needed]); a
	// waiter with an id hears those from heedAt on ([Watcher.heedFrom]).
	broadcast bool
	heedAt    time.Time
	// late marks the nodes that had not named the waiter when a wake-up
	// ended its wait: the release that woke it may still reach them, and
	// their next message until lateUntil is that release's, not a new one.
	late      []bool
	lateUntil time.Time

	// unready is set when Ready gave up before the channels were
	// confirmed: the waker wakes the watcher once they are.
	unready atomic.Bool

	// gap is how long a wake-up must wait after the previous attempt,
	// which a wake-up started and the nodes refused: it doubles with each
	// such attempt in a row, so that forged wake messages cost a waiter a
	// bounded rate of attempts. Only Wait reads and writes it.
	gap time.Duration
	// rewoken says that a subscription made again, not a release, ended
	// the last wait: Wait reported no wake-up (the attempt was handed
	// nothing), yet the gap grows after it as after one, so that nothing a
	// node sends sets the pace of the waiter's attempts. Only Wait reads
	// and writes it.
	rewoken bool
}

// Woken returns the channel that receives a value when a release meant
// for wt is heard; nil, which blocks, for a nil wt.
func (wt *Watcher) Woken() <-chan struct{} {
	if wt == nil {
		return nil
	}
	return wt.c
}

// watches reports whether wt listens on channel. Called with w.mu held:
// [Waker.Widen] adds channels.
func (wt *Watcher) watches(channel string) bool { return slices.Contains(wt.chans, channel) }

// hear records that node i named the waiter, unless the message is a late
// one of the release that woke it last (see [Watcher.late]); broadcast says
// that the node announced a release on a broadcast channel.
func (wt *Watcher) hear(i int, broadcast bool) {
	wt.mu.Lock()
	if i < len(wt.late) && wt.late[i] {
		wt.late[i] = false
		if time.Now().Before(wt.lateUntil) {
			wt.mu.Unlock()
			return
		}
	}
	if broadcast && wt.id != "" && time.Now().Before(wt.heedAt) {
		wt.mu.Unlock()
		return // see heedFrom
	}
	if i < len(wt.heard) && !wt.heard[i] {
		wt.heard[i] = true
		wt.nheard++
		if wt.first.IsZero() {
			wt.first = time.Now()
		}
	}
	wt.broadcast = wt.broadcast || broadcast
	wt.mu.Unlock()
	signal(wt.c)
}

// heedFrom makes a waiter with an id hear the releases announced on the
// broadcast channels only from at on, and forgets those heard so far when
// at is still to come: a wake-up that the gap defers (see [Watcher.Wait])
// must not end at a release heard before it, whose key others took long
// since, but at the next one, when the key is free. Those releases, the
// previous release's processes', free the key for whoever asks first.
func (wt *Watcher) heedFrom(at time.Time) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.heedAt = at
	if wt.broadcast && time.Now().Before(at) {
		clear(wt.heard)
		wt.nheard, wt.first, wt.broadcast = 0, time.Time{}, false
	}
}

// Ready waits until every node has confirmed the watcher's channels (or
// failed to), for at most bound or until ctx ends; a release published
// after that wakes the watcher. When bound passes first, the watcher is
// woken once the channels are ready: a release published meanwhile may
// have gone unheard.
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
			wt.unready.Store(true)
			wt.w.mu.Lock()
			select {
			case <-ready: // ready meanwhile, before the waker could wake it
				wt.unready.Store(false)
			default:
			}
			wt.w.mu.Unlock()
			return
		case <-ctx.Done():
			return
		}
	}
}

// Hears reports whether the waiter hears as many nodes as it needs: a
// named waiter, a quorum of them; false for a nil wt.
func (wt *Watcher) Hears() bool {
	if wt == nil {
		return false
	}
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	return wt.w.liveLocked() >= wt.need
}

// ListeningSince reports whether every channel of wt has been subscribed
// to on every node (or failed to be) since before t: a release that named
// the waiter after t was heard.
func (wt *Watcher) ListeningSince(t time.Time) bool {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	for _, ch := range wt.chans {
		wc := wt.w.chans[ch]
		if wc == nil || wc.readyAt.IsZero() || !wc.readyAt.Before(t) {
			return false
		}
	}
	return true
}

// Drain forgets what was heard, before a new attempt: what is heard from
// now on is about releases the attempt may not have seen.
func (wt *Watcher) Drain() {
	if wt == nil {
		return
	}
	wt.mu.Lock()
	clear(wt.heard)
	wt.nheard, wt.first, wt.resub, wt.broadcast = 0, time.Time{}, false, false
	wt.mu.Unlock()
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
	if wt.id != "" && wt.w.named[wt.id] == wt {
		delete(wt.w.named, wt.id)
	}
	for _, ch := range wt.chans {
		wc := wt.w.chans[ch]
		delete(wc.watchers, wt)
		if len(wc.watchers) == 0 {
			wc.idle = now
		}
	}
}

// spread returns how long a watcher of the broadcast channels waits, after
// a release was announced, before trying again: a random share of as many
// half attempts (each of about attempt) as other clients listened for the
// release, at most maxSpread. Every such waiter wakes at the same
// announcement; spread over time, the first ones take what the release
// freed. The count comes from whoever published the release: whatever it
// says, the wait is within [0, maxSpread).
func (wt *Watcher) spread(attempt time.Duration) time.Duration {
	// Two clients competing at once always leave one with a majority (of
	// the nodes that answer), so spreading starts at three listeners — of
	// which one may be the releaser, still listening for a while.
	listening := min(wt.listening.Load(), maxListening)
	if listening <= 2 || attempt <= 0 {
		return 0
	}
	others := listening - 2
	// Half an attempt: about when a grant is made. The product is taken
	// only when it is at most 2*maxSpread: no overflow.
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
