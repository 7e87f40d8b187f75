package adapterkit

import (
	"context"
	"fmt"
	"sync"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Subscribe takes a dedicated connection from the client and hooks the
// handler to it; on a cluster, a sharded subscription. The subscription
// ends when that connection fails: package dlm opens another.
func (n *Pipelined[C, D]) Subscribe(ctx context.Context, h driver.PubSubHandler) (_ driver.Subscription, err error) {
	defer n.panics().RecoverTo(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	if !n.gate.Enter() {
		return nil, n.errs.closed
	}
	defer n.gate.Leave()
	if n.sharded {
		return n.subscribeSharded(ctx, c, h)
	}
	d, ended := n.lib.Dedicate(c, h, "subscribe")
	s := &subscription[C, D]{n: n, d: d, done: make(chan struct{})}
	go func() {
		for range ended { // at most one error, then closed
		}
		close(s.done)
	}()
	return s, nil
}

type subscription[C, D comparable] struct {
	n    *Pipelined[C, D]
	d    D
	done chan struct{}
	// mu makes a request and Close exclusive, and closed refuses requests
	// after Close: a dedicated client of a cluster connects at its first
	// request, even after its Close, and that connection would be left
	// open.
	mu     sync.Mutex
	closed bool
}

func (s *subscription[C, D]) Subscribe(ctx context.Context, channels ...string) error {
	return s.send(ctx, "SUBSCRIBE", channels)
}

func (s *subscription[C, D]) Unsubscribe(ctx context.Context, channels ...string) error {
	return s.send(ctx, "UNSUBSCRIBE", channels)
}

func (s *subscription[C, D]) send(ctx context.Context, cmd string, channels []string) (err error) {
	defer s.n.panics().RecoverTo(&err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.n.errs.subscriptionClosed
	}
	return s.n.lib.PubSub(ctx, s.d, cmd, channels...)
}

func (s *subscription[C, D]) Done() <-chan struct{} { return s.done }

// Close closes the dedicated connection and waits until the hooks are no
// longer called. When closing panics, the connection may still be open:
// Close returns the [driver.PanicError] at once.
func (s *subscription[C, D]) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.n.panics().Do(func() { s.n.lib.CloseDedicated(s.d) })
	s.mu.Unlock()
	if err != nil {
		return err
	}
	<-s.done
	return nil
}

// On a node that is a Redis Cluster, package dlm publishes wake-ups on shard
// channels (SPUBLISH), which live on the master of the channel's slot: a
// release reaches that master's subscribers only, not every master. The
// subscription reads the slots' masters once (CLUSTER SLOTS), keeps one
// dedicated connection per master, opened on first use ([Shards]), and
// sends SSUBSCRIBE for each channel to the master of its slot. It ends, as
// a whole, when any of its connections fails; package dlm then opens
// another, which reads the slots anew (after a failover or a slot
// migration, say).

// shardedSubscription is the subscription of a node in cluster mode.
type shardedSubscription[C, D comparable] struct {
	*Shards[D] // by master address
	n          *Pipelined[C, D]
	c          C
	h          driver.PubSubHandler
	slots      []slotRange
}

func (n *Pipelined[C, D]) subscribeSharded(ctx context.Context, c C, h driver.PubSubHandler) (driver.Subscription, error) {
	v, err := n.lib.Do(dialHere(n.callContext(ctx)), c, "CLUSTER", "SLOTS")
	if err != nil {
		if !n.isReply(err) {
			return nil, n.ctxError(ctx, err)
		}
		return nil, err
	}
	slots, err := parseSlots(n.lib.Name(), v)
	if err != nil {
		return nil, err
	}
	closeConn := func(d D) error { n.lib.CloseDedicated(d); return nil }
	return &shardedSubscription[C, D]{Shards: NewShards(n.panics(), closeConn, n.errs.subscriptionEnded), n: n, c: c, h: h, slots: slots}, nil
}

// master returns the address of the master of channel's slot.
func (s *shardedSubscription[C, D]) master(channel string) (string, error) {
	slot := int64(KeySlot(channel))
	for _, r := range s.slots {
		if r.first <= slot && slot <= r.last {
			return r.addr, nil
		}
	}
	return "", fmt.Errorf("%s: no master serves slot %d", s.n.lib.Name(), slot)
}

// shard returns the connection to the master of channel's slot, opening it.
func (s *shardedSubscription[C, D]) shard(channel string) (D, error) {
	addr, err := s.master(channel)
	if err != nil {
		var zero D
		return zero, err
	}
	var ended <-chan error
	open := func() (D, error) {
		nc, ok := s.n.lib.Nodes(s.c)[addr]
		if !ok {
			var zero D
			return zero, fmt.Errorf("%s: no connection to %s, the master of %q", s.n.lib.Name(), addr, channel)
		}
		var d D
		d, ended = s.n.lib.Dedicate(nc, serialized[C, D]{s}, "ssubscribe")
		return d, nil
	}
	return s.Conn(addr, open, func(D) {
		for range ended { // at most one error, then closed
		}
	})
}

// serialized hands what the subscription's connections receive to its
// handler, one call at a time across the connections.
type serialized[C, D comparable] struct{ s *shardedSubscription[C, D] }

func (h serialized[C, D]) Message(channel, payload string) {
	h.s.Handle(func() { h.s.h.Message(channel, payload) })
}

func (h serialized[C, D]) Subscribed(channel string) {
	h.s.Handle(func() { h.s.h.Subscribed(channel) })
}

func (s *shardedSubscription[C, D]) Subscribe(ctx context.Context, channels ...string) error {
	return s.each(ctx, "SSUBSCRIBE", channels)
}

func (s *shardedSubscription[C, D]) Unsubscribe(ctx context.Context, channels ...string) error {
	return s.each(ctx, "SUNSUBSCRIBE", channels)
}

// each sends cmd for every channel, one channel at a time (the channels of
// one SSUBSCRIBE must share a slot), to the master of its slot.
func (s *shardedSubscription[C, D]) each(ctx context.Context, cmd string, channels []string) (err error) {
	defer s.n.panics().RecoverTo(&err)
	for _, ch := range channels {
		d, err := s.shard(ch)
		if err != nil {
			return err
		}
		if err := s.n.lib.PubSub(ctx, d, cmd, ch); err != nil {
			return err
		}
	}
	return nil
}
