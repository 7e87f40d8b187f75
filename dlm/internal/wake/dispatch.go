package wake

// notify passes what channel heard to its watchers: [script.WakeGrant] a
// grant; [script.WakeAll], or [script.WakeRelease] and a count, a release
// for every watcher; a fair waiter's id a release meant for the fair
// waiter of that id, which wakes no other fair waiter. It ignores, and
// counts, a payload [parse] does not accept: anyone allowed to publish on
// the channel may have sent it.
//
// It is the one place where an announcement becomes wake-ups: which of a
// channel's watchers hear it is decided here alone.
func (w *Waker) notify(channel, payload string) {
	m, ok := parse(payload)
	if !ok {
		w.malformed(channel, len(payload))
		return
	}
	w.dispatch(channel, m, true)
}

// dispatch passes m to the watchers of channel; announced says that a node
// announced it, rather than the waker itself (see [Watcher.Wait]).
func (w *Waker) dispatch(channel string, m msg, announced bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wc := w.chans[channel]
	if wc == nil {
		return
	}
	for wt := range wc.watchers {
		switch {
		case m.kind == kindGrant:
			wt.grants.Add(1)
			signal(wt.taken)
			continue
		case m.kind == kindRelease:
			wt.listening.Store(m.listening)
		case wt.id != "" && wt.id != m.id:
			continue
		default:
			wt.listening.Store(0)
		}
		if announced {
			wt.announced.Store(true)
		}
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
