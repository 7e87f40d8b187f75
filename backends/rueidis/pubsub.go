package rueidis

import (
	"context"
	"errors"
	"sync"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
)

var _ driver.Subscriber = (*node)(nil)

// Subscribe takes a dedicated connection from the client (rueidis'
// Dedicate) and sets pub/sub hooks on it; on a cluster, a sharded
// subscription (pubsub_sharded.go). The subscription ends when that
// connection fails: package dlm opens another.
func (n *node) Subscribe(ctx context.Context, h driver.PubSubHandler) (_ driver.Subscription, err error) {
	defer n.panics().RecoverTo(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := n.client(ctx)
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	if n.sharded {
		return n.subscribeSharded(ctx, c, h)
	}
	n.calls.RLock()
	defer n.calls.RUnlock()
	if n.closed.Load() {
		return nil, errClosed
	}
	dc, _ := c.Dedicate() // its Close releases the connection
	ended := dc.SetPubSubHooks(rueidisclient.PubSubHooks{
		OnMessage: func(m rueidisclient.PubSubMessage) { h.Message(m.Channel, m.Message) },
		OnSubscription: func(s rueidisclient.PubSubSubscription) {
			if s.Kind == "subscribe" {
				h.Subscribed(s.Channel)
			}
		},
	})
	s := &subscription{n: n, dc: dc, done: make(chan struct{})}
	go func() {
		for range ended { // at most one error, then closed
		}
		close(s.done)
	}()
	return s, nil
}

type subscription struct {
	n    *node
	dc   rueidisclient.DedicatedClient
	done chan struct{}
	// mu makes a request and Close exclusive, and closed refuses requests
	// after Close: a dedicated client of a cluster connects at its first
	// request, even after its Close, and that connection would be left
	// open.
	mu     sync.Mutex
	closed bool
}

// errSubscriptionClosed is returned by a subscription's requests after its
// Close.
var errSubscriptionClosed = errors.New("rueidis: subscription closed")

func (s *subscription) Subscribe(ctx context.Context, channels ...string) (err error) {
	defer s.n.panics().RecoverTo(&err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSubscriptionClosed
	}
	return s.dc.Do(ctx, s.dc.B().Subscribe().Channel(channels...).Build()).Error()
}

func (s *subscription) Unsubscribe(ctx context.Context, channels ...string) (err error) {
	defer s.n.panics().RecoverTo(&err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSubscriptionClosed
	}
	return s.dc.Do(ctx, s.dc.B().Unsubscribe().Channel(channels...).Build()).Error()
}

func (s *subscription) Done() <-chan struct{} { return s.done }

// Close closes the dedicated connection and waits until the hooks are no
// longer called. When closing panics, the connection may still be open:
// Close returns the [driver.PanicError] at once.
func (s *subscription) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.n.closeSafe(s.dc.Close)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	<-s.done
	return nil
}
