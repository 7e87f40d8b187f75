package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// On a node that is a Redis Cluster, package dlm publishes wake-ups on shard
// channels (SPUBLISH), which live on the master of the channel's slot: a
// release reaches that master's subscribers only, not every master. The
// subscription therefore keeps one connection per master, opened on first
// use ([adapterkit.Shards]), and sends SSUBSCRIBE for each channel to the
// master of its slot (one channel per command: the channels of one
// SSUBSCRIBE must share a slot). It ends, as a whole, when any of its
// connections fails; package dlm then opens another, which finds the
// masters anew (after a failover or a slot migration, say).

// shardedSubscription is the subscription of a ClusterClient node.
type shardedSubscription struct {
	*adapterkit.Shards[*redis.PubSub] // by master address
	n                                 *node
	cc                                *redis.ClusterClient
	h                                 driver.PubSubHandler
}

func (n *node) subscribeSharded(ctx context.Context, cc *redis.ClusterClient, h driver.PubSubHandler) (driver.Subscription, error) {
	// PING makes go-redis load the slots now, so that a cluster that is
	// down says so here.
	if _, err := n.wait(ctx, n.safe(func(ctx context.Context) (any, error) { return nil, cc.Ping(ctx).Err() })); err != nil {
		return nil, err
	}
	shards := adapterkit.NewShards(n.panics(), (*redis.PubSub).Close, errSubscriptionEnded)
	return &shardedSubscription{Shards: shards, n: n, cc: cc, h: h}, nil
}

// shard returns the connection to the master of channel's slot, opening it.
func (s *shardedSubscription) shard(ctx context.Context, channel string) (*redis.PubSub, error) {
	m, err := s.cc.MasterForKey(ctx, channel)
	if err != nil {
		return nil, err
	}
	return s.Conn(m.Options().Addr, func() (*redis.PubSub, error) { return m.SSubscribe(ctx), nil }, s.read)
}

// errSubscriptionEnded is returned by the requests of a subscription that
// has ended.
var errSubscriptionEnded = errors.New("goredis: subscription ended")

// read reports what ps receives until it fails; the whole subscription then
// ends. A panic in go-redis or in the handler ends it as a failure would;
// after one in Receive, ps is left out of the connections the end closes
// (see recover.go).
func (s *shardedSubscription) read(ps *redis.PubSub) {
	receive := func() (any, error) { return ps.Receive(context.Background()) }
	if s.n.panics().Read(receive, s.deliver) {
		s.Forget(ps)
	}
}

// deliver hands what a connection received to the handler, one call at a
// time across the connections.
func (s *shardedSubscription) deliver(v any) {
	s.Handle(func() { deliver(s.h, "ssubscribe", v) })
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
