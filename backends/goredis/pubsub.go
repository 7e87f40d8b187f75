package goredis

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

var _ driver.Subscriber = (*node)(nil)

// Subscribe opens a go-redis PubSub, which dials a connection of its own
// outside the client's pool, and starts reading it; on a ClusterClient, a
// sharded subscription (pubsub_sharded.go). The subscription ends at
// the first failure of that connection: package dlm opens another.
func (n *node) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	if cc, ok := n.client.(*redis.ClusterClient); ok {
		return n.subscribeSharded(ctx, cc, h)
	}
	v, err := n.wait(ctx, n.safe(func(ctx context.Context) (any, error) { return n.client.Subscribe(ctx), nil }))
	if err != nil {
		return nil, err
	}
	ps := v.(*redis.PubSub)
	// PING makes go-redis connect now, so that a node that is down says so
	// here; the PONG comes back through Receive.
	if _, err := n.wait(ctx, n.safe(func(ctx context.Context) (any, error) { return nil, ps.Ping(ctx) })); err != nil {
		ps.Close()
		return nil, err
	}
	s := &subscription{n: n, ps: ps, h: h}
	// Closing a subscription that already ended is not an error. A panic
	// in go-redis or in the handler ends the subscription as a failure
	// would; after one in Receive the PubSub is left as it is (see
	// recover.go).
	s.Reader = n.panics().StartReader(s.receive, s.deliver, ps.Close, redis.ErrClosed)
	return s, nil
}

type subscription struct {
	*adapterkit.Reader
	n  *node
	ps *redis.PubSub
	h  driver.PubSubHandler
}

// receive waits for what comes next on the connection.
func (s *subscription) receive() (any, error) { return s.ps.Receive(context.Background()) }

// deliver hands what the connection received to the handler.
func (s *subscription) deliver(v any) { deliver(s.h, "subscribe", v) }

// deliver hands what a pub/sub connection received to h: a message, or
// the confirmation of a subscription of kind ("subscribe" or
// "ssubscribe"). Whatever else go-redis hands over (pongs, other kinds of
// confirmation) is none of h's business.
func deliver(h driver.PubSubHandler, kind string, v any) {
	switch m := v.(type) {
	case *redis.Message:
		h.Message(m.Channel, m.Payload)
	case *redis.Subscription:
		if m.Kind == kind {
			h.Subscribed(m.Channel)
		}
	}
}

func (s *subscription) Subscribe(ctx context.Context, channels ...string) error {
	_, err := s.n.wait(ctx, s.n.safe(func(ctx context.Context) (any, error) { return nil, s.ps.Subscribe(ctx, channels...) }))
	return err
}

func (s *subscription) Unsubscribe(ctx context.Context, channels ...string) error {
	_, err := s.n.wait(ctx, s.n.safe(func(ctx context.Context) (any, error) { return nil, s.ps.Unsubscribe(ctx, channels...) }))
	return err
}
