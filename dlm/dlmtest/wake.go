package dlmtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// wakeRetry is the waiter's retry pace in testWakeOnRelease: a waiter that
// obtains a lock before its retry could have come was woken by the
// release.
const wakeRetry = 4 * time.Second

// wakeTries is how many times testWakeOnRelease lets a waiter come no
// sooner than its retry could have before it fails: each time with the
// retry pace doubled.
const wakeTries = 3

// testWakeOnRelease checks that a client waiting for a lock another client
// holds is woken by its release, not by its next retry, when the nodes
// implement [driver.Subscriber] — also after every node's subscription
// connection was cut and had to be made again. Without Subscriber, it
// checks that the waiter still obtains the lock at its retry.
//
// Woken means the attempt that obtained the lock began before any retry
// could have: the backoff draws the wait after a failed attempt from half
// the retry pace to all of it, so a grant earlier than half the pace after
// the last failed attempt began came from a wake-up. A later grant on a
// loaded machine may be a wake-up delayed or a retry: that is
// inconclusive, and the waiter waits again with the pace doubled. How soon
// a waiter is woken is proven on virtual time, in package dlm.
func testWakeOnRelease(t *testing.T, c *cluster) {
	_, subscribes := c.nodes[0].(driver.Subscriber)
	if !subscribes {
		t.Logf("%T does not implement driver.Subscriber: waiters retry at their own pace", c.nodes[0])
	}
	waiter := c.client(t)
	for _, cut := range []bool{false, true} {
		key := "wake"
		if cut {
			key = "wake-after-cut"
		}
		retry := wakeRetry
		for try := 1; ; try++ {
			early := c.waitForRelease(t, waiter, key, cut, subscribes, retry)
			if !subscribes || early < 0 {
				break
			}
			if try == wakeTries {
				t.Errorf("waiter obtained %q %v after the earliest retry its last failed attempt allowed (subscriptions cut before: %v), %d times, the last with a retry pace of %v; want it woken by the release before",
					key, early.Round(time.Millisecond), cut, wakeTries, retry)
				break
			}
			t.Logf("inconclusive: waiter obtained %q %v after its earliest retry (pace %v); again with the retry pace doubled", key, early.Round(time.Millisecond), retry)
			retry *= 2
		}
	}
}

// waitForRelease holds key through the cluster's manager while waiter waits
// for it with a fixed retry pace, releases it, and returns how long after
// the earliest retry of the waiter's last failed attempt the waiter
// obtained it: negative when it obtained it before any retry could come.
// With cut, every node's subscription connections are cut while the waiter
// waits, and made again before the release.
func (c *cluster) waitForRelease(t *testing.T, waiter *dlm.Manager, key string, cut, subscribes bool, retry time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	held, err := c.m.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *dlm.Lock
		err error
		at  time.Time
	}
	var mu sync.Mutex
	var lastFailed time.Time // when the waiter's last failed attempt began
	attempts := hookFunc(func(_ context.Context, e *dlm.Event) {
		if e.Kind == dlm.EventAttempt && e.Err != nil {
			mu.Lock()
			lastFailed = later(lastFailed, e.Start)
			mu.Unlock()
		}
	})
	res := make(chan result, 1)
	go func() {
		l, err := waiter.Lock(ctx, key, dlm.WithRetry(0, dlm.FixedBackoff(retry)), dlm.WithHook(attempts))
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
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("waiter's Lock(%q) = %v; want the lock after its release", key, r.err)
	}
	r.l.Unlock(ctx)
	mu.Lock()
	defer mu.Unlock()
	if lastFailed.IsZero() {
		t.Fatalf("waiter's Lock(%q) obtained the lock with no failed attempt while another held it", key)
	}
	return r.at.Sub(lastFailed.Add(retry / 2))
}

// awaitSubscribers waits until every node has a subscriber to one of key's
// wake channels — its broadcast channel, or a manager's channel on which the
// releases name its waiters (shard channels on one of its masters, for a
// Redis Cluster).
func (c *cluster) awaitSubscribers(t *testing.T, key string) {
	t.Helper()
	pattern := suitePrefix + "{" + key + "}:wake*"
	for deadline := time.Now().Add(c.patience()); ; time.Sleep(2 * time.Millisecond) {
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
			t.Fatalf("no subscriber to %s on every node after %v", pattern, c.patience())
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
