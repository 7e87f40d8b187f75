package wake

import (
	"slices"
	"time"
)

// notify passes what node i heard on channel to the watchers: on a
// manager's channel, the id of a waiter a release handed the key to, to
// that waiter alone (counted per node, see [Watcher.Wait]); on a broadcast
// channel, a release to every watcher of the channel, with its count of
// listeners, or a grant, to the watchers without an id (observers). It ignores, and counts, a payload the channel's
// grammar does not accept ([parseNamed], [parseBroadcast]): anyone allowed
// to publish on the channel may have sent it. A well-formed id of no
// waiter of the channel — one that stopped waiting — is ignored too, but
// not counted.
//
// It is the one place where an announcement becomes wake-ups: which of a
// channel's watchers hear it is decided here alone.
func (w *Waker) notify(i int, channel, payload string) {
	w.mu.Lock()
	wc := w.chans[channel]
	if wc == nil {
		w.mu.Unlock()
		return
	}
	if wc.named {
		id, ok := parseNamed(w.id, payload)
		wt := w.named[id]
		if wt != nil && !wt.watches(channel) {
			wt = nil
		}
		if ok && wt == nil {
			w.keepUnwatched(channel, id, i)
		}
		w.mu.Unlock()
		switch {
		case !ok:
			w.malformed(channel, len(payload))
		case wt != nil:
			wt.hear(i, false)
		}
		return
	}
	m, ok := parseBroadcast(payload)
	if !ok {
		w.mu.Unlock()
		w.malformed(channel, len(payload))
		return
	}
	watchers := make([]*Watcher, 0, len(wc.watchers))
	for wt := range wc.watchers {
		if m.grant {
			if wt.id != "" {
				// A grant (a new leader) is news for the observers
				// only: to a waiter widened to the broadcast channel
				// it is no release.
				continue
			}
		} else {
			wt.listening.Store(m.listening)
		}
		watchers = append(watchers, wt)
	}
	w.mu.Unlock()
	for _, wt := range watchers {
		wt.hear(i, !m.grant)
	}
}

// resubscribed wakes every watcher of channel, whose subscription was made
// again after a failure: a release may have gone unheard meanwhile.
func (w *Waker) resubscribed(channel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wc := w.chans[channel]
	if wc == nil {
		return
	}
	for wt := range wc.watchers {
		if !wc.named {
			wt.listening.Store(0)
		}
		wt.mu.Lock()
		wt.resub = true
		wt.mu.Unlock()
		signal(wt.c)
	}
}

// signal sends on c unless a value is waiting there already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// unwatchedKey names what node i said of a waiter without a watcher: the
// channel and the waiter's id.
type unwatchedKey struct{ channel, id string }

// unwatched is the nodes that named a waiter before it watched, and when
// the first did.
type unwatched struct {
	nodes []int
	at    time.Time
}

// maxUnwatched bounds the namings kept for waiters without a watcher:
// anyone allowed to publish on the channel could name ids nobody has.
const maxUnwatched = 256

// keepUnwatched records that node i named id, a waiter of this manager
// with no watcher on channel: a release may name a waiter after its first
// attempt was refused and before it watches (the rest of the attempt's
// round, its release), on a channel the manager listened on already, so
// that [Watcher.ListeningSince] holds and nothing else would tell it. The
// waiter's Watch takes the namings over ([Waker.Watch]). They are kept
// for the reservation's life, two node timeouts, after which the key is
// free again; when maxUnwatched are kept, the oldest are dropped first
// only once expired, and a new one is not kept. Called with w.mu held.
func (w *Waker) keepUnwatched(channel, id string, i int) {
	now := time.Now()
	k := unwatchedKey{channel, id}
	if u := w.unwatched[k]; u != nil {
		if !slices.Contains(u.nodes, i) {
			u.nodes = append(u.nodes, i)
		}
		return
	}
	if len(w.unwatched) >= maxUnwatched {
		for k, u := range w.unwatched {
			if now.Sub(u.at) > w.unwatchedLife() {
				delete(w.unwatched, k)
			}
		}
		if len(w.unwatched) >= maxUnwatched {
			return
		}
	}
	if w.unwatched == nil {
		w.unwatched = map[unwatchedKey]*unwatched{}
	}
	w.unwatched[k] = &unwatched{nodes: []int{i}, at: now}
}

// takeUnwatched returns, and forgets, the nodes that named id on channel
// while it had no watcher, within their life. Called with w.mu held.
func (w *Waker) takeUnwatched(channel, id string) []int {
	k := unwatchedKey{channel, id}
	u := w.unwatched[k]
	if u == nil {
		return nil
	}
	delete(w.unwatched, k)
	if time.Since(u.at) > w.unwatchedLife() {
		return nil
	}
	return u.nodes
}

// unwatchedLife is how long a naming without a watcher is kept: a key
// handed on stays reserved for two node timeouts.
func (w *Waker) unwatchedLife() time.Duration {
	return max(2*w.timeout, 100*time.Millisecond)
}
