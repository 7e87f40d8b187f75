package dlm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// TestGuardKeyExpires checks on real Redis that the restart guard leaves no
// key behind for good: a guarded grant gives the guard key a TTL of at most
// the window (the node has been up longer than the window), the key is gone
// a window after the lock key's last use, and a node whose guard key
// expired, but which did not restart, is counted at once.
func TestGuardKeyExpires(t *testing.T) {
	const window = 1500 * time.Millisecond
	c := newFencingCluster(t, dlm.WithTTL(time.Second), dlm.WithRestartGuard(window))
	ctx := context.Background()
	guardKey := fencePrefix + "{k}:guard"
	// Every node is new to the guard; INFO counts uptime in whole seconds.
	time.Sleep(window + time.Second)
	l, err := c.m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	c.settle(t, 0, 1, 2, 3, 4)
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
	const expiry = 2 * time.Second
	c := newFencingCluster(t, dlm.WithTTL(time.Second), dlm.WithFencing())
	ctx := context.Background()
	counter := fencePrefix + "{k}:fence"
	grant := func(opts ...dlm.Option) uint64 {
		t.Helper()
		l, err := c.m.TryLock(ctx, "k", opts...)
		if err != nil {
			t.Fatalf("TryLock: %v", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		c.settle(t, 0, 1, 2, 3, 4)
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
	const expiry = 5 * time.Second
	opts := []dlm.Option{
		dlm.WithTTL(time.Second), dlm.WithFencing(), dlm.WithFenceExpiry(expiry),
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
	for i, s := range c.servers {
		v, err := s.Do("PTTL", fencePrefix+"{k}:fence")
		if ms, _ := v.(int64); err != nil || ms <= 0 || ms > expiry.Milliseconds() {
			t.Errorf("node %d: counter PTTL %v, %v; want a TTL of at most %v", i, v, err, expiry)
		}
	}
}
