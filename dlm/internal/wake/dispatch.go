package wake

// notify passes what node i heard on channel to the watchers: on a
// manager's channel, the id of a waiter a release handed the key to, to
// that waiter alone (counted per node, see [Watcher.Wait]); on a broadcast
// channel, a release to every watcher of the channel, with its count of
// listeners, or a grant. It ignores, and counts, a payload the channel's
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
		w.mu.Unlock()
		switch {
		case !ok:
			w.malformed(channel, len(payload))
		case wt != nil:
			wt.hear(i)
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
		if !m.grant {
			wt.listening.Store(m.listening)
		}
		watchers = append(watchers, wt)
	}
	w.mu.Unlock()
	for _, wt := range watchers {
		wt.hear(i)
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
