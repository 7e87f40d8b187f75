package dlmtest

import (
	"context"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// wakeRetry is the waiter's retry pace in testWakeOnRelease: a waiter that
// obtains a lock well before it was woken by the release.
const wakeRetry = 4 * time.Second

// testWakeOnRelease checks that a client waiting for a lock another client
// holds obtains it the moment it is released, not at its next retry, when
// the nodes implement [driver.Subscriber] — also after every node's
// subscription connection was cut and had to be made again. Without
// Subscriber, it checks that the waiter still obtains the lock at its retry.
func testWakeOnRelease(t *testing.T, c *cluster) {
	_, subscribes := c.nodes[0].(driver.Subscriber)
	waiter := c.client(t)
	ctx := context.Background()
	for _, cut := range []bool{false, true} {
		key := "wake"
		if cut {
			key = "wake-after-cut"
		}
		held, err := c.m.Lock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			l   *dlm.Lock
			err error
			at  time.Time
		}
		res := make(chan result, 1)
		go func() {
			l, err := waiter.Lock(ctx, key, dlm.WithRetry(0, dlm.FixedBackoff(wakeRetry)))
			res <- result{l, err, time.Now()}
		}()
		if subscribes {
			c.awaitSubscribers(t, key)
			if cut {
				for _, node := range c.servers {
					procs, _ := processes(node)
					for _, s := range procs {
						if _, err := s.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
							t.Fatalf("CLIENT KILL TYPE pubsub on %s: %v", s.Addr(), err)
						}
					}
				}
				c.awaitSubscribers(t, key)
			}
		} else {
			t.Logf("%T does not implement driver.Subscriber: waiters retry at their own pace", c.nodes[0])
		}
		released := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-res
		if r.err != nil {
			t.Fatalf("waiter's Lock(%q) = %v; want the lock after its release", key, r.err)
		}
		r.l.Unlock(ctx)
		if d := r.at.Sub(released); subscribes && d > wakeRetry/4 {
			t.Errorf("waiter obtained %q %v after its release (subscriptions cut before: %v); want it woken at once, not at its retry %v to %v later",
				key, d.Round(time.Millisecond), cut, wakeRetry/2, wakeRetry)
		}
	}
}

// awaitSubscribers waits until every node has a subscriber to one of key's
// wake channels — its broadcast channel, or a manager's channel on which the
// releases name its waiters (shard channels on one of its masters, for a
// Redis Cluster).
func (c *cluster) awaitSubscribers(t *testing.T, key string) {
	t.Helper()
	pattern := suitePrefix + "{" + key + "}:wake*"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		all := true
		for _, node := range c.servers {
			subs := int64(0)
			procs, sharded := processes(node)
			for _, s := range procs {
				subs += subscribersOf(t, s, pattern, sharded)
			}
			if subs == 0 {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no subscriber to %s on every node after 10s", pattern)
		}
	}
}

// subscribersOf returns how many subscribers s has to the channels that
// match pattern: shard channels when sharded (a Redis Cluster's waiters
// listen on those).
func subscribersOf(t *testing.T, s *redistest.Server, pattern string, sharded bool) int64 {
	t.Helper()
	list, count := "CHANNELS", "NUMSUB"
	if sharded {
		list, count = "SHARDCHANNELS", "SHARDNUMSUB"
	}
	v, err := s.Do("PUBSUB", list, pattern)
	if err != nil {
		t.Fatalf("PUBSUB %s on %s: %v", list, s.Addr(), err)
	}
	var subs int64
	for _, ch := range v.([]any) {
		name, _ := ch.(string)
		v, err := s.Do("PUBSUB", count, name)
		if err != nil {
			t.Fatalf("PUBSUB %s on %s: %v", count, s.Addr(), err)
		}
		if reply, _ := v.([]any); len(reply) == 2 {
			n, _ := reply[1].(int64)
			subs += n
		}
	}
	return subs
}
