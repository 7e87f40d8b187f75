package wake

import (
	"context"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// pump owns one node's subscription.
type pump struct {
	w       *Waker
	i       int
	node    driver.Subscriber
	kick    chan struct{} // a channel was added
	running bool          // guarded by w.mu
	down    bool          // the last subscription failed; guarded by w.mu
}

// handler passes what node i hears on one subscription to the waker.
type handler struct {
	w *Waker
	i int
	// owed is what the subscription's SUBSCRIBEs are owed; nil takes every
	// confirmation (tests that play a node's part).
	owed *owed
}

// Message passes a message heard on channel to the waker's watchers.
func (h handler) Message(channel, payload string) { h.w.notify(h.i, channel, payload) }

// Subscribed records that node i confirmed channel, when the confirmation
// answers a SUBSCRIBE the subscription sent for it that no confirmation
// answered yet. Any other — one the node repeats, or sends unasked — is
// the node's word alone and ignored: each confirmation after the first of
// a channel wakes its watchers ([Waker.answer]), so one the pump did not
// ask for would let a node set the pace of their attempts.
func (h handler) Subscribed(channel string) {
	if h.owed != nil && !h.owed.take(channel) {
		return
	}
	h.w.answer(h.i, channel, true)
}

// owed counts, by channel, the SUBSCRIBEs one subscription sent that the
// node has not confirmed yet: at most one per channel the pump holds or
// holds no longer.
type owed struct {
	mu sync.Mutex
	n  map[string]int
}

// ask records a SUBSCRIBE about to be sent for channels.
func (o *owed) ask(channels []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = make(map[string]int, len(channels))
	}
	for _, ch := range channels {
		o.n[ch]++
	}
}

// forget drops what is owed for channels, unsubscribed from: their
// confirmations, if they still come, no longer matter.
func (o *owed) forget(channels []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ch := range channels {
		delete(o.n, ch)
	}
}

// take reports whether a confirmation of channel was owed, and counts it
// as paid.
func (o *owed) take(channel string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n[channel] == 0 {
		return false
	}
	if o.n[channel]--; o.n[channel] == 0 {
		delete(o.n, channel)
	}
	return true
}

func (p *pump) run() {
	var sub driver.Subscription
	var asked *owed // sub's SUBSCRIBEs not confirmed yet
	have := map[string]bool{}
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	sweep := time.NewTicker(Linger / 2)
	defer sweep.Stop()
	reopen := MinReopen
	var opened time.Time // when sub was opened
	// lost ends sub, which failed, and waits before the next is opened:
	// not at all after a subscription that lasted (one cut costs no
	// announcement), reopen after one that failed soon after it was opened.
	// Each subscription made again wakes the waiters of its channels (see
	// [Waker.answer]), so a node that keeps dropping them must not set the
	// pace of its waiters' attempts. It returns false when the waker closes
	// meanwhile.
	lost := func() bool {
		sub.Close()
		sub = nil
		p.w.failed(p.i)
		if time.Since(opened) >= healthySub {
			reopen = MinReopen
			return true
		}
		ok := p.pause(reopen)
		reopen = min(2*reopen, MaxReopen)
		return ok
	}
	for {
		want, ok := p.w.wanted(p)
		if !ok {
			return
		}
		if sub == nil {
			var err error
			asked = &owed{}
			if sub, err = p.open(asked); err != nil {
				p.w.failed(p.i)
				if !p.pause(reopen) {
					return
				}
				reopen = min(2*reopen, MaxReopen)
				continue
			}
			opened = time.Now()
			clear(have)
			p.w.setDown(p.i, false)
		}
		if err := p.update(sub, asked, want, have); err != nil {
			if !lost() {
				return
			}
			continue
		}
		select {
		case <-p.kick:
		case <-sweep.C:
		case <-sub.Done():
			if !lost() {
				return
			}
		case <-p.w.ctx.Done():
			return
		}
	}
}

// open opens a subscription, whose SUBSCRIBEs are recorded in asked.
func (p *pump) open(asked *owed) (driver.Subscription, error) {
	ctx, cancel := context.WithTimeout(p.w.ctx, openTimeout)
	defer cancel()
	return p.node.Subscribe(ctx, handler{p.w, p.i, asked})
}

// update subscribes to the wanted channels sub does not hold yet and
// unsubscribes from those no longer wanted; asked records each SUBSCRIBE
// before it is sent, since its confirmations may come before Subscribe
// returns.
func (p *pump) update(sub driver.Subscription, asked *owed, want []string, have map[string]bool) error {
	var add, drop []string
	wanted := make(map[string]bool, len(want))
	for _, ch := range want {
		wanted[ch] = true
		if !have[ch] {
			add = append(add, ch)
		}
	}
	for ch := range have {
		if !wanted[ch] {
			drop = append(drop, ch)
		}
	}
	ctx, cancel := context.WithTimeout(p.w.ctx, p.w.timeout)
	defer cancel()
	if len(add) > 0 {
		asked.ask(add)
		if err := sub.Subscribe(ctx, add...); err != nil {
			return err
		}
		for _, ch := range add {
			have[ch] = true
		}
	}
	if len(drop) > 0 {
		asked.forget(drop)
		if err := sub.Unsubscribe(ctx, drop...); err != nil {
			return err
		}
		for _, ch := range drop {
			delete(have, ch)
		}
	}
	return nil
}

// pause waits d, or returns false when the waker closes first.
func (p *pump) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.w.ctx.Done():
		return false
	}
}
