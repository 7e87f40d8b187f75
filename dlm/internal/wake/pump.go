package wake

import (
	"context"
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

// handler passes what node i hears to the waker.
type handler struct {
	w *Waker
	i int
}

// Message passes a message heard on channel to the waker's watchers.
func (h handler) Message(channel, payload string) { h.w.notify(h.i, channel, payload) }

// Subscribed records that node i confirmed channel.
func (h handler) Subscribed(channel string) { h.w.answer(h.i, channel, true) }

func (p *pump) run() {
	var sub driver.Subscription
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
			if sub, err = p.open(); err != nil {
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
		if err := p.update(sub, want, have); err != nil {
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

func (p *pump) open() (driver.Subscription, error) {
	ctx, cancel := context.WithTimeout(p.w.ctx, openTimeout)
	defer cancel()
	return p.node.Subscribe(ctx, handler{p.w, p.i})
}

// update subscribes to the wanted channels sub does not hold yet and
// unsubscribes from those no longer wanted.
func (p *pump) update(sub driver.Subscription, want []string, have map[string]bool) error {
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
		if err := sub.Subscribe(ctx, add...); err != nil {
			return err
		}
		for _, ch := range add {
			have[ch] = true
		}
	}
	if len(drop) > 0 {
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
