package memlock

import (
	"context"
	"sync"

	"github.com/dlmgo/redlock/dlm/driver"
)

// subscription is a node's pub/sub connection: what it hears is queued and
// passed to its handler in order by one goroutine, which ends with Close.
type subscription struct {
	n *Node
	h driver.PubSubHandler

	mu       sync.Mutex
	channels map[string]bool // guarded by n.mu
	queue    []event
	closed   bool
	kick     chan struct{} // the queue has events
	done     chan struct{} // closed by Close; the goroutine then ends
	ended    chan struct{} // closed when the goroutine has ended
}

// event is a message (subscribed false) or a confirmation.
type event struct {
	channel, payload string
	subscribed       bool
}

// Subscribe opens a subscription whose messages and confirmations go to h.
func (n *Node) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	s := &subscription{n: n, h: h, channels: map[string]bool{}, kick: make(chan struct{}, 1), done: make(chan struct{}), ended: make(chan struct{})}
	n.subs[s] = struct{}{}
	go s.run()
	return s, nil
}

func (s *subscription) run() {
	defer close(s.ended)
	for {
		select {
		case <-s.done:
			return
		case <-s.kick:
		}
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, e := range q {
			select {
			case <-s.done:
				return // the handler is not called after Close
			default:
			}
			if e.subscribed {
				s.h.Subscribed(e.channel)
			} else {
				s.h.Message(e.channel, e.payload)
			}
		}
	}
}

// push queues e for the handler.
func (s *subscription) push(e event) {
	s.mu.Lock()
	if !s.closed {
		s.queue = append(s.queue, e)
	}
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Subscribe subscribes to channels and confirms each.
func (s *subscription) Subscribe(ctx context.Context, channels ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	for _, ch := range channels {
		s.channels[ch] = true
		s.push(event{channel: ch, subscribed: true})
	}
	return nil
}

// Unsubscribe drops channels.
func (s *subscription) Unsubscribe(ctx context.Context, channels ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	for _, ch := range channels {
		delete(s.channels, ch)
	}
	return nil
}

// Done is closed by Close, and when the node goes down.
func (s *subscription) Done() <-chan struct{} { return s.done }

// Close ends the subscription and waits for its goroutine.
func (s *subscription) Close() error {
	s.n.mu.Lock()
	delete(s.n.subs, s)
	s.n.mu.Unlock()
	s.end()
	<-s.ended
	return nil
}

// end closes done, once, which ends the goroutine.
func (s *subscription) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
}

// listeners is PUBSUB NUMSUB for channel. n.mu is held.
func (n *Node) listeners(channel string) int {
	c := 0
	for s := range n.subs {
		if s.channels[channel] {
			c++
		}
	}
	return c
}

// publish passes payload to the subscriptions holding channel. n.mu is held.
func (n *Node) publish(channel, payload string) {
	for s := range n.subs {
		if s.channels[channel] {
			s.push(event{channel: channel, payload: payload})
		}
	}
}
