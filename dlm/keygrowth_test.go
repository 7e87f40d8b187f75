package dlm_test

import (
	"context"
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
	time.Sleep(window) // every node is new to the guard
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
