package driver

import "context"

// Subscriber is an optional interface a [Node] may implement so that clients
// waiting for a lock wake the moment it is released, instead of at their next
// retry. The release script publishes on a channel named after the lock's
// key; package dlm opens one subscription per node and manager, shares it
// among all the manager's waiters, and reopens it when it ends.
//
// Without Subscriber, or while a node's subscription is down, waiters retry
// after their jittered backoff only: a lost message costs latency, never
// safety.
type Subscriber interface {
	// Subscribe opens a connection dedicated to pub/sub, apart from the
	// connections Eval uses, and returns once it is ready or ctx is done.
	// It reports to h, from one goroutine at a time and in the order the
	// node sent them, every message published on the channels it holds and
	// every confirmation of a SUBSCRIBE. h's methods do not block.
	Subscribe(ctx context.Context, h PubSubHandler) (Subscription, error)
}

// PubSubHandler receives what a [Subscription] hears from its node. Package
// dlm implements it.
type PubSubHandler interface {
	// Message reports a message published on channel with payload.
	Message(channel, payload string)
	// Subscribed reports that the node confirmed the subscription to
	// channel: messages published from then on are delivered.
	Subscribed(channel string)
}

// Subscription is a node's pub/sub connection, opened by
// [Subscriber.Subscribe]. Its methods are called from one goroutine at a time.
type Subscription interface {
	// Subscribe sends SUBSCRIBE for channels. It may return before the
	// node confirms; the confirmations go to the [PubSubHandler].
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe sends UNSUBSCRIBE for channels.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Done is closed when the subscription has ended, by Close or by the
	// loss of its connection; the handler is not called after that.
	// Package dlm then opens a new one.
	Done() <-chan struct{}
	// Close ends the subscription and closes its connection.
	Close() error
}
