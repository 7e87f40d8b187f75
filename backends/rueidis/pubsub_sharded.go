package rueidis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// On a node that is a Redis Cluster, package dlm publishes wake-ups on shard
// channels (SPUBLISH), which live on the master of the channel's slot: a
// release reaches that master's subscribers only, not every master. The
// subscription reads the slots' masters once (CLUSTER SLOTS), keeps one
// dedicated connection per master, opened on first use
// ([adapterkit.Shards]), and sends
// SSUBSCRIBE for each channel to the master of its slot. It ends, as a
// whole, when any of its connections fails; package dlm then opens another,
// which reads the slots anew (after a failover or a slot migration, say).

// shardedSubscription is the subscription of a node in cluster mode.
type shardedSubscription struct {
	*adapterkit.Shards[rueidisclient.DedicatedClient] // by master address
	n                                                 *node
	c                                                 rueidisclient.Client
	h                                                 driver.PubSubHandler
	slots                                             []slotRange
}

// slotRange is a range of slots and its master, from CLUSTER SLOTS.
type slotRange struct {
	first, last int64
	addr        string
}

// errSubscriptionEnded is returned by the requests of a subscription that
// has ended.
var errSubscriptionEnded = errors.New("rueidis: subscription ended")

func (n *node) subscribeSharded(ctx context.Context, c rueidisclient.Client, h driver.PubSubHandler) (_ driver.Subscription, err error) {
	defer n.panics().RecoverTo(&err)
	n.calls.RLock()
	defer n.calls.RUnlock()
	if n.closed.Load() {
		return nil, errClosed
	}
	res := c.Do(n.callContext(ctx), c.B().ClusterSlots().Build())
	if err := res.NonRedisError(); err != nil {
		return nil, ctxError(ctx, err)
	}
	rows, err := res.ToArray()
	if err != nil {
		return nil, err
	}
	closeConn := func(dc rueidisclient.DedicatedClient) error { dc.Close(); return nil }
	s := &shardedSubscription{Shards: adapterkit.NewShards(n.panics(), closeConn, errSubscriptionEnded), n: n, c: c, h: h}
	for _, row := range rows {
		f, err := row.ToArray()
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("rueidis: CLUSTER SLOTS: unexpected row %v", row)
		}
		first, err1 := f[0].AsInt64()
		last, err2 := f[1].AsInt64()
		m, err3 := f[2].ToArray()
		if err1 != nil || err2 != nil || err3 != nil || len(m) < 2 {
			return nil, fmt.Errorf("rueidis: CLUSTER SLOTS: unexpected row %v", row)
		}
		host, _ := m[0].ToString()
		port, _ := m[1].AsInt64()
		s.slots = append(s.slots, slotRange{first, last, fmt.Sprintf("%s:%d", host, port)})
	}
	return s, nil
}

// master returns the address of the master of channel's slot.
func (s *shardedSubscription) master(channel string) (string, error) {
	slot := int64(keySlot(channel))
	for _, r := range s.slots {
		if r.first <= slot && slot <= r.last {
			return r.addr, nil
		}
	}
	return "", fmt.Errorf("rueidis: no master serves slot %d", slot)
}

// shard returns the connection to the master of channel's slot, opening it.
func (s *shardedSubscription) shard(channel string) (rueidisclient.DedicatedClient, error) {
	addr, err := s.master(channel)
	if err != nil {
		return nil, err
	}
	var ended <-chan error
	open := func() (rueidisclient.DedicatedClient, error) {
		nc := s.c.Nodes()[addr]
		if nc == nil {
			return nil, fmt.Errorf("rueidis: no connection to %s, the master of %q", addr, channel)
		}
		dc, _ := nc.Dedicate() // its Close releases the connection
		ended = dc.SetPubSubHooks(rueidisclient.PubSubHooks{
			OnMessage: func(m rueidisclient.PubSubMessage) {
				s.Handle(func() { s.h.Message(m.Channel, m.Message) })
			},
			OnSubscription: func(m rueidisclient.PubSubSubscription) {
				if m.Kind == "ssubscribe" {
					s.Handle(func() { s.h.Subscribed(m.Channel) })
				}
			},
		})
		return dc, nil
	}
	return s.Conn(addr, open, func(rueidisclient.DedicatedClient) {
		for range ended { // at most one error, then closed
		}
	})
}

func (s *shardedSubscription) Subscribe(ctx context.Context, channels ...string) error {
	return s.each(ctx, channels, func(dc rueidisclient.DedicatedClient, ch string) rueidisclient.Completed {
		return dc.B().Ssubscribe().Channel(ch).Build()
	})
}

func (s *shardedSubscription) Unsubscribe(ctx context.Context, channels ...string) error {
	return s.each(ctx, channels, func(dc rueidisclient.DedicatedClient, ch string) rueidisclient.Completed {
		return dc.B().Sunsubscribe().Channel(ch).Build()
	})
}

// each sends the command cmd builds for every channel, one channel at a
// time (the channels of one SSUBSCRIBE must share a slot), to the master of
// its slot.
func (s *shardedSubscription) each(ctx context.Context, channels []string, cmd func(rueidisclient.DedicatedClient, string) rueidisclient.Completed) (err error) {
	defer s.n.panics().RecoverTo(&err)
	for _, ch := range channels {
		dc, err := s.shard(ch)
		if err != nil {
			return err
		}
		if err := dc.Do(ctx, cmd(dc, ch)).Error(); err != nil {
			return err
		}
	}
	return nil
}

// keySlot returns the Redis Cluster hash slot of key (CRC16 of the key, or
// of its hash tag, modulo 16384).
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}
