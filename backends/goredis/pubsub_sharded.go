package goredis

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
)

// On a node that is a Redis Cluster, package dlm publishes wake-ups on shard
// channels (SPUBLISH), which live on the master of the channel's slot: a
// release reaches that master's subscribers only, not every master. The
// subscription therefore keeps one connection per master, opened on first
// use, and sends SSUBSCRIBE for each channel to the master of its slot (one
// channel per command: the channels of one SSUBSCRIBE must share a slot).
// It ends, as a whole, when any of its connections fails; package dlm then
// opens another, which finds the masters anew (after a failover or a slot
// migration, say).

// shardedSubscription is the subscription of a ClusterClient node.
type shardedSubscription struct {
	n    *node
	cc   *redis.ClusterClient
	h    driver.PubSubHandler
	hmu  sync.Mutex // one handler call at a time, whichever connection
	done chan struct{}

	mu      sync.Mutex
	shards  map[string]*redis.PubSub // by master address
	ended   bool
	readers sync.WaitGroup
	// closeErr is the first panic closing the connections, set before
	// done is closed.
	closeErr error
}

func (n *node) subscribeSharded(ctx context.Context, cc *redis.ClusterClient, h driver.PubSubHandler) (driver.Subscription, error) {
	// PING makes go-redis load the slots now, so that a cluster that is
	// down says so here.
	if _, err := n.wait(ctx, n.safe(func(ctx context.Context) (any, error) { return nil, cc.Ping(ctx).Err() })); err != nil {
		return nil, err
	}
	return &shardedSubscription{n: n, cc: cc, h: h, done: make(chan struct{}), shards: map[string]*redis.PubSub{}}, nil
}

// shard returns the connection to the master of channel's slot, opening it.
func (s *shardedSubscription) shard(ctx context.Context, channel string) (*redis.PubSub, error) {
	m, err := s.cc.MasterForKey(ctx, channel)
	if err != nil {
		return nil, err
	}
	addr := m.Options().Addr
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, errSubscriptionEnded
	}
	if ps := s.shards[addr]; ps != nil {
		return ps, nil
	}
	ps := m.SSubscribe(ctx)
	s.shards[addr] = ps
	s.readers.Add(1)
	go s.read(ps)
	return ps, nil
}

// errSubscriptionEnded is returned by the requests of a subscription that
// has ended.
var errSubscriptionEnded = errors.New("goredis: subscription ended")

// read reports what ps receives until it fails, then ends the whole
// subscription. A panic in go-redis or in the handler ends it as a failure
// would; after one in Receive, ps is left out of the connections end closes
// (see recover.go).
func (s *shardedSubscription) read(ps *redis.PubSub) {
	defer s.readers.Done()
	defer s.end()
	for {
		v, err := s.n.receive(ps)
		if isPanic(err) {
			s.forget(ps)
			return
		}
		if err != nil || s.n.handle(func() { s.deliver(v) }) != nil {
			return
		}
	}
}

// deliver hands what a connection received to the handler, one call at a
// time across the connections. A handler that panics leaves hmu unlocked,
// so that the other connections' readers, which may be waiting for it, go
// on to their end.
func (s *shardedSubscription) deliver(v any) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	switch m := v.(type) {
	case *redis.Message:
		s.h.Message(m.Channel, m.Payload)
	case *redis.Subscription:
		if m.Kind == "ssubscribe" {
			s.h.Subscribed(m.Channel)
		}
	}
}

// forget leaves ps out of the connections end closes.
func (s *shardedSubscription) forget(ps *redis.PubSub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, p := range s.shards {
		if p == ps {
			delete(s.shards, addr)
		}
	}
}

// end closes every connection and marks the subscription done, once.
func (s *shardedSubscription) end() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	shards := s.shards
	s.shards = nil
	s.mu.Unlock()
	for _, ps := range shards {
		if err := s.n.closeSafe(ps.Close); isPanic(err) && s.closeErr == nil {
			s.closeErr = err
		}
	}
	close(s.done)
}

func (s *shardedSubscription) Subscribe(ctx context.Context, channels ...string) error {
	return s.each(ctx, channels, func(ctx context.Context, ps *redis.PubSub, ch string) error { return ps.SSubscribe(ctx, ch) })
}

func (s *shardedSubscription) Unsubscribe(ctx context.Context, channels ...string) error {
	return s.each(ctx, channels, func(ctx context.Context, ps *redis.PubSub, ch string) error { return ps.SUnsubscribe(ctx, ch) })
}

// each sends cmd for every channel to the master of its slot.
func (s *shardedSubscription) each(ctx context.Context, channels []string, cmd func(context.Context, *redis.PubSub, string) error) error {
	_, err := s.n.wait(ctx, s.n.safe(func(ctx context.Context) (any, error) {
		for _, ch := range channels {
			ps, err := s.shard(ctx, ch)
			if err != nil {
				return nil, err
			}
			if err := cmd(ctx, ps, ch); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}))
	return err
}

func (s *shardedSubscription) Done() <-chan struct{} { return s.done }

// Close closes the connections and waits for the readers to end. When
// closing one panicked, that connection may still be open: Close returns
// the [driver.PanicError] without waiting, and its reader ends when the
// connection fails.
func (s *shardedSubscription) Close() error {
	s.end()
	<-s.done
	if s.closeErr != nil {
		return s.closeErr
	}
	s.readers.Wait()
	return nil
}
