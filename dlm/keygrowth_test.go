package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestGuardKeyExpires checks on real Redis that the restart guard leaves no
// key behind for good: a guarded grant gives the guard key a TTL of at most
// the window (the node has been up longer than the window), the key is gone
// a window after the lock key's last use, and a node whose guard key
// expired, but which did not restart, is counted at once.
func TestGuardKeyExpires(t *testing.T) {
	t.Parallel()
	const window = 1500 * time.Millisecond
	c := newFencingCluster(t, dlm.WithTTL(time.Second), dlm.WithNodeTimeout(500*time.Millisecond), dlm.WithRestartGuard(window))
	ctx := context.Background()
	guardKey := fencePrefix + "{k}:guard"
	// Every node is new to the guard: wait out its window once.
	time.Sleep(guardSettled(window))
	mark := c.mark()
	l, err := c.m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	c.settle(t, mark, 2, 0, 1, 2, 3, 4) // an acquire and a release on each node
	for i, s := range c.servers {
		v, err := s.Do("PTTL", guardKey)
		if ms, _ := v.(int64); err != nil || ms <= 0 || ms > window.Milliseconds() {
			t.Errorf("node %d: PTTL %s = %v, %v; want a TTL of at most the window %v", i, guardKey, v, err, window)
		}
	}
	time.Sleep(window + 200*time.Millisecond)
	for i, s := range c.servers {
		if v, err := s.Do("EXISTS", guardKey); err != nil || v != int64(0) {
			t.Errorf("node %d: EXISTS %s a window after its last use = %v, %v; want 0", i, guardKey, v, err)
		}
	}
	l, err = c.m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock after the guard keys expired, no node restarted: %v", err)
	}
	l.Unlock(ctx)
}

// TestFenceExpiry checks on real Redis the counters' lifecycle under
// WithFenceExpiry: a grant gives the counter a TTL of the expiry, a counter
// that expired is gone from every node, and the next grant's token is still
// greater than every earlier one. Without the option counters never expire.
// The last grant goes through the guarded fenced script, whose arguments
// differ.
func TestFenceExpiry(t *testing.T) {
	t.Parallel()
	const expiry = 2 * time.Second
	c := newFencingCluster(t, dlm.WithTTL(time.Second), dlm.WithNodeTimeout(500*time.Millisecond), dlm.WithFencing())
	ctx := context.Background()
	counter := fencePrefix + "{k}:fence"
	grant := func(opts ...dlm.Option) uint64 {
		t.Helper()
		mark := c.mark()
		l, err := c.m.TryLock(ctx, "k", opts...)
		if err != nil {
			t.Fatalf("TryLock: %v", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		c.settle(t, mark, 2, 0, 1, 2, 3, 4) // an acquire and a release on each node
		return l.Token()
	}
	pttls := func() []int64 {
		out := make([]int64, len(c.servers))
		for i, s := range c.servers {
			v, err := s.Do("PTTL", counter)
			if err != nil {
				t.Fatal(err)
			}
			out[i], _ = v.(int64)
		}
		return out
	}

	first := grant()
	for i, ms := range pttls() {
		if ms != -1 {
			t.Errorf("node %d: counter PTTL %d without WithFenceExpiry; want -1 (no expiry)", i, ms)
		}
	}
	withExpiry := dlm.WithFenceExpiry(expiry)
	second := grant(withExpiry)
	if second != first+1 {
		t.Errorf("token after an existing counter = %d; want %d", second, first+1)
	}
	for i, ms := range pttls() {
		if ms <= 0 || ms > expiry.Milliseconds() {
			t.Errorf("node %d: counter PTTL %d; want a TTL of at most %v", i, ms, expiry)
		}
	}
	time.Sleep(expiry + 200*time.Millisecond)
	for i, ms := range pttls() {
		if ms != -2 {
			t.Errorf("node %d: counter PTTL %d after the expiry; want -2 (gone)", i, ms)
		}
	}
	third := grant(withExpiry)
	if third <= second {
		t.Errorf("token after the counters expired = %d; want more than %d", third, second)
	}
	fourth := grant(withExpiry, dlm.WithRestartGuard(time.Second))
	if fourth <= third {
		t.Errorf("guarded token = %d; want more than %d", fourth, third)
	}
	for i, ms := range pttls() {
		if ms <= 0 || ms > expiry.Milliseconds() {
			t.Errorf("node %d: counter PTTL %d after a guarded grant; want a TTL of at most %v", i, ms, expiry)
		}
	}
	if _, err := c.m.TryLock(ctx, "k", withExpiry, dlm.WithTTL(3*time.Second)); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("TryLock with a fence expiry shorter than the TTL = %v; want ErrInvalid", err)
	}
}

// TestFenceExpiryFair checks on real Redis the fair, fenced and guarded
// acquire script with a fence expiry, whose arguments differ most: a
// waiter in line obtains the lock after its holder releases it, with a
// greater token and a counter that expires.
func TestFenceExpiryFair(t *testing.T) {
	t.Parallel()
	const expiry = 5 * time.Second
	opts := []dlm.ManagerOption{
		dlm.WithTTL(time.Second), dlm.WithNodeTimeout(500 * time.Millisecond), dlm.WithFencing(), dlm.WithFenceExpiry(expiry),
		dlm.WithRestartGuard(time.Second), dlm.WithFairness(dlm.Fairness{}),
	}
	c := newFencingCluster(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	time.Sleep(2 * time.Second) // every node is new to the guard
	held, err := c.m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	got := make(chan *dlm.Lock, 1)
	go func() {
		l, err := c.m.Lock(ctx, "k")
		if err != nil {
			t.Errorf("waiter's Lock: %v", err)
		}
		got <- l
	}()
	time.Sleep(300 * time.Millisecond) // the waiter takes its place in line
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		return
	}
	defer l.Unlock(ctx)
	if l.Token() <= held.Token() {
		t.Errorf("waiter's token %d; want more than the holder's %d", l.Token(), held.Token())
	}
	// The grants return at a quorum: a request to the slowest node may
	// still be under way, and it lands within the node timeout; poll waits
	// for it for a bound stretched to the pace measured on the run.
	for i, s := range c.servers {
		poll(t, c.servers[0], fmt.Sprintf("counter with a TTL of at most %v on node %d", expiry, i), func() bool {
			v, err := s.Do("PTTL", fencePrefix+"{k}:fence")
			ms, _ := v.(int64)
			return err == nil && ms > 0 && ms <= expiry.Milliseconds()
		})
	}
}

// TestFairLineExpires checks on real Redis the lifecycle of a fair lock's
// line. While waiters are in line its keys live, renewed with their places,
// so that a waiter who comes after the line's first TTL would have ended
// still queues behind one who has waited since; once the line is empty,
// every key of the line is gone within the longer of the place expiry and
// the TTL; and a line begun afresh serves its waiters in order.
func TestFairLineExpires(t *testing.T) {
	t.Parallel()
	const (
		expiry = 1500 * time.Millisecond // Fairness.Expiry
		ttl    = time.Second
		keep   = max(expiry, ttl) // how long a place keeps the line's keys
	)
	srvs := redistest.StartServers(t, 3)
	opts := []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{Expiry: expiry}), dlm.WithTTL(ttl), dlm.WithNodeTimeout(expiry / 5)}
	ctx := context.Background()
	lineKeys := []string{"redlock:{q}:waiters", "redlock:{q}:waiters:end"}
	pttls := func(key string) []int64 {
		t.Helper()
		out := make([]int64, len(srvs))
		for i, s := range srvs {
			v, err := s.Do("PTTL", key)
			if err != nil {
				t.Fatal(err)
			}
			out[i], _ = v.(int64)
		}
		return out
	}
	granted := make(chan int, 4)
	// wait starts waiter i's Lock, from a manager of its own, and returns
	// once the waiter is in line, which then holds inLine places. The
	// waiter sends i to granted when it obtains the lock, and unlocks.
	wait := func(i int, inLine int64, opts ...dlm.ManagerOption) {
		t.Helper()
		m := newWakeManager(t, srvs, opts...)
		go func() {
			l, err := m.Lock(ctx, "q")
			if err != nil {
				t.Errorf("waiter %d: Lock = %v", i, err)
				granted <- -1
				return
			}
			granted <- i
			l.Unlock(ctx)
		}()
		awaitLine(t, srvs, "q", inLine)
	}
	inOrder := func(from, to int) {
		t.Helper()
		// The bound only keeps a lost turn from hanging the test.
		p := redistest.MeasurePace(t, srvs[0])
		bound := p.Stretch(10 * time.Second)
		for want := from; want < to; want++ {
			select {
			case got := <-granted:
				if got != want {
					t.Fatalf("the lock went to waiter %d; want waiter %d, in the order they asked", got, want)
				}
			case <-time.After(bound):
				t.Fatalf("waiter %d did not obtain the lock within %v (pace %v)", want, bound, p)
			}
		}
	}

	// A line that lives longer than keep: the holder keeps the lock by Do's
	// extensions, which leave the line alone, and has no place in it; the
	// first waiter's place is renewed by its attempts.
	// Its node timeout is the longest its place expiry allows: awaitHeld
	// waits for its grant on every node (see holdEverywhere).
	holder := newWakeManager(t, srvs, append(opts, dlm.WithNodeTimeout(expiry/2))...)
	holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- holder.Do(ctx, "q", func(context.Context) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	awaitHeld(t, srvs, "q")
	wait(0, 1, opts...)
	time.Sleep(2 * keep) // longer than a line given a TTL once would live
	for i, ms := range pttls(lineKeys[0]) {
		if ms <= 0 || ms > keep.Milliseconds() {
			t.Errorf("node %d: PTTL %s = %d while a waiter is in line; want a TTL of at most %v, renewed", i, lineKeys[0], ms, keep)
		}
	}
	awaitLine(t, srvs, "q", 1) // the waiter's place lives on
	wait(1, 2, opts...)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("holder's Do: %v", err)
	}
	inOrder(0, 2)

	// The line is empty: its keys are gone, or expire.
	awaitLine(t, srvs, "q", 0)
	for i, ms := range pttls(lineKeys[0]) {
		if ms != -2 && (ms <= 0 || ms > keep.Milliseconds()) {
			t.Errorf("node %d: PTTL %s = %d once the line is empty; want it gone or a TTL of at most %v", i, lineKeys[0], ms, keep)
		}
	}
	deadline := time.Now().Add(keep + time.Second)
	for _, key := range lineKeys {
		for {
			left := 0
			for _, ms := range pttls(key) {
				if ms != -2 {
					left++
				}
			}
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still on %d nodes %v after the line emptied; want it gone", key, left, keep+time.Second)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// A line begun afresh serves its waiters in order.
	long := []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{Expiry: 30 * time.Second}), dlm.WithTTL(30 * time.Second), dlm.WithNodeTimeout(expiry / 5)}
	held, err := newWakeManager(t, srvs, append(long, holdEverywhere(t, srvs[0]))...).Lock(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	awaitHeld(t, srvs, "q")
	for i := range 2 {
		wait(2+i, int64(1+i), long...)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	inOrder(2, 4)
}
