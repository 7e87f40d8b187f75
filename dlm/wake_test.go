package dlm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// slowRetry is a retry pace so slow that a waiter obtaining a lock well
// before it must have been woken by the release.
const slowRetry = 10 * time.Second

// newWakeManager returns a manager over its own connections to srvs, whose
// waiters retry only every 5 to 10 seconds unless woken.
func newWakeManager(t *testing.T, srvs []*redistest.Server, opts ...dlm.ManagerOption) *dlm.Manager {
	t.Helper()
	nodes := make([]driver.Node, len(srvs))
	for i, s := range srvs {
		nodes[i] = respNode(t, s.Addr(), "")
	}
	m, err := dlm.New(nodes, append([]dlm.ManagerOption{dlm.WithRetry(0, dlm.FixedBackoff(slowRetry))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// subscribers returns how many clients of s are in pub/sub mode.
func subscribers(t *testing.T, s *redistest.Server) int {
	t.Helper()
	v, err := s.Do("CLIENT", "LIST", "TYPE", "pubsub")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(strings.TrimSpace(v.(string)), "\n") + min(1, len(strings.TrimSpace(v.(string))))
}

// listening returns how many subscribers the wake channels of key have on
// s: its broadcast channel and the channels of the managers whose waiters
// it names.
func listening(t *testing.T, s *redistest.Server, key string) int64 {
	t.Helper()
	v, err := s.Do("PUBSUB", "CHANNELS", "redlock:{"+key+"}:wake*")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, ch := range v.([]any) {
		v, err := s.Do("PUBSUB", "NUMSUB", ch.(string))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := v.([]any)[1].(int64)
		total += n
	}
	return total
}

// awaitListening waits until every server has a subscriber for key's wake
// channel.
func awaitListening(t *testing.T, srvs []*redistest.Server, key string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		all := true
		for _, s := range srvs {
			all = all && listening(t, s, key) > 0
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no subscriber to %q's wake channel on every node after 5s", key)
		}
	}
}

// lockAsync starts m.Lock(key) and returns where its outcome and the time
// it returned arrive.
func lockAsync(m *dlm.Manager, key string) <-chan lockResult {
	res := make(chan lockResult, 1)
	go func() {
		l, err := m.Lock(context.Background(), key)
		res <- lockResult{l, err, time.Now()}
	}()
	return res
}

type lockResult struct {
	l   *dlm.Lock
	err error
	at  time.Time
}

// TestWaiterWokenByRelease checks that a client waiting for a lock held by
// another obtains it as soon as it is released, not at its next retry, and
// that this still holds after the waiter's subscriptions were cut and had to
// be made again.
func TestWaiterWokenByRelease(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	holderM, waiterM := newWakeManager(t, srvs), newWakeManager(t, srvs)
	ctx := context.Background()
	for _, cut := range []bool{false, true} {
		t.Run(fmt.Sprintf("subscriptions cut: %v", cut), func(t *testing.T) {
			key := fmt.Sprintf("woken-%v", cut)
			held, err := holderM.Lock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			res := lockAsync(waiterM, key)
			awaitListening(t, srvs, key)
			if cut {
				for _, s := range srvs {
					if _, err := s.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
						t.Fatal(err)
					}
				}
				awaitListening(t, srvs, key) // made again
			}
			released := time.Now()
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-res
			if r.err != nil {
				t.Fatalf("waiter's Lock = %v", r.err)
			}
			defer r.l.Unlock(ctx)
			if d := r.at.Sub(released); d > slowRetry/5 {
				t.Errorf("waiter obtained the lock %v after its release; want it woken at once, long before its next retry (%v to %v)", d, slowRetry/2, slowRetry)
			}
		})
	}
}

// TestOneSubscriptionPerNode checks that a manager's many waiters, on many
// keys, share one subscription connection per node.
func TestOneSubscriptionPerNode(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	holderM, waiterM := newWakeManager(t, srvs), newWakeManager(t, srvs)
	ctx := context.Background()
	const keys, perKey = 20, 2
	var held []*dlm.Lock
	results := make(chan lockResult, keys*perKey)
	for i := range keys {
		key := fmt.Sprintf("shared-%d", i)
		l, err := holderM.Lock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		for range perKey {
			go func() {
				l, err := waiterM.Lock(ctx, key)
				results <- lockResult{l, err, time.Now()}
			}()
		}
	}
	for i := range keys {
		awaitListening(t, srvs, fmt.Sprintf("shared-%d", i))
	}
	for i, s := range srvs {
		if n := subscribers(t, s); n != 1 {
			t.Errorf("node %d has %d pub/sub connections for %d waiters on %d keys; want 1", i, n, keys*perKey, keys)
		}
	}
	for _, l := range held {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(slowRetry / 5)
	for range keys * perKey {
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("waiter's Lock = %v", r.err)
			}
			r.l.Unlock(ctx) // the next waiter for the key takes its turn
		case <-deadline:
			t.Fatalf("waiters still waiting %v after the releases; want them woken", slowRetry/5)
		}
	}
}

// TestHandOverServesOtherProcesses checks that goroutines of one manager
// passing a lock among themselves, without going back to the nodes, do not
// keep another process's waiter out: within a short slice the lock is
// released on the nodes, which wakes that waiter.
func TestHandOverServesOtherProcesses(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	busy, other := newWakeManager(t, srvs, dlm.WithTTL(10*time.Second)), newWakeManager(t, srvs, dlm.WithTTL(10*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	const goroutines = 4
	for range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for ctx.Err() == nil {
				l, err := busy.Lock(ctx, "hot")
				if err != nil {
					return
				}
				time.Sleep(time.Millisecond)
				l.Unlock(context.Background())
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // the goroutines pass the lock around
	start := time.Now()
	lctx, lcancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer lcancel()
	l, err := other.Lock(lctx, "hot")
	if err != nil {
		t.Fatalf("other process's Lock while %d goroutines of one manager take turns = %v after %v; want the lock within a slice or so",
			goroutines, err, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("the other process waited %v", time.Since(start).Round(time.Millisecond))
	l.Unlock(context.Background())
	cancel()
	for range goroutines {
		<-done
	}
}

// TestFencedLockNotHandedOver checks that a fenced lock is never passed to
// the next caller in the manager: each grant gets a greater fencing token
// from the nodes.
func TestFencedLockNotHandedOver(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	m := newWakeManager(t, srvs, dlm.WithFencing())
	ctx := context.Background()
	first, err := m.Lock(ctx, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	res := lockAsync(m, "fenced")
	time.Sleep(100 * time.Millisecond) // the second caller lines up behind the first
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.l.Unlock(ctx)
	if r.l.Token() <= first.Token() || r.l.Handle().Secret == first.Handle().Secret {
		t.Errorf("second grant: fencing token %d after %d, same secret: %v; want a greater fencing token and a new grant",
			r.l.Token(), first.Token(), r.l.Handle().Secret == first.Handle().Secret)
	}
}

// TestWokenBeforeReleaseReachedQuorum checks a waiter named by a release
// that has run on two nodes of five, which handed the key to it, but not yet
// on a majority: the other three still hold the key. The release reaches
// them within a node timeout, without naming the waiter there (as a release
// does on nodes whose key had expired); the waiter, named by fewer nodes than
// its quorum, attempts a node timeout after the first named it, and obtains
// the lock then, not at its next retry 5 to 10 seconds later.
func TestWokenBeforeReleaseReachedQuorum(t *testing.T) {
	t.Parallel()
	const nodeTimeout = time.Second // the settle after the first naming
	srvs := redistest.StartServers(t, 5)
	attempts := &attemptCounter{}
	holderM := newWakeManager(t, srvs)
	waiterM := newWakeManager(t, srvs, dlm.WithHook(attempts), dlm.WithNodeTimeout(nodeTimeout))
	ctx := context.Background()
	const key = "half-released"
	// TryLock: the holder takes no place in line, so that the release the
	// test runs below, without the holder's waiter id, finds the waiter at
	// the head.
	held, err := holderM.TryLock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	awaitHeld(t, srvs, key) // by every node, not only the quorum TryLock returned at
	res := lockAsync(waiterM, key)
	awaitListening(t, srvs, key)
	awaitWaiting(t, srvs, key, 1)
	// The release as nodes 0 and 1 run it: the key handed to the waiter,
	// and the waiter named.
	rkey := "redlock:{" + key + "}"
	keys := append([]string{rkey}, script.LineKeys(rkey)...)
	args := []string{held.Handle().Secret, "", "0", "2000", "2000", script.ReleaseLock, script.Flag{Mode: script.Loud}.Arg()}
	named := time.Now()
	for _, s := range srvs[:2] {
		n := respNode(t, s.Addr(), "")
		if v, err := n.Eval(ctx, script.Release, keys, args); err != nil || v != int64(1) {
			t.Fatalf("the release on %s = %v, %v; want 1", s.Addr(), v, err)
		}
	}
	time.Sleep(nodeTimeout / 4)
	// The release reaches nodes 2 to 4, which do not name the waiter.
	for _, s := range srvs[2:] {
		if _, err := s.Do("DEL", rkey); err != nil {
			t.Fatal(err)
		}
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("waiter's Lock = %v", r.err)
	}
	defer r.l.Unlock(ctx)
	// The attempt comes a node timeout after the first naming; two node
	// timeouts bound it.
	if d := r.at.Sub(named); d > 2*nodeTimeout {
		t.Errorf("waiter obtained the lock %v after two nodes named it; want within two node timeouts (%v), long before its next retry (%v to %v)",
			d, 2*nodeTimeout, slowRetry/2, slowRetry)
	}
	t.Logf("%d attempts; lock obtained %v after two nodes named it", attempts.n.Load(), r.at.Sub(named).Round(time.Microsecond))
}
