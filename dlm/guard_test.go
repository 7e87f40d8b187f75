package dlm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// TestRestartGuard replays the unsafe restart: A holds a lock on nodes
// {0,1,2}; node 2 restarts empty at once; B then needs only nodes {2,3,4}.
// Without the guard B obtains the lock while A's is still valid — the
// violation the delayed-restart rule exists for. With the guard, node 2 is
// not counted until the window has passed, and B is refused.
func TestRestartGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		opts    []dlm.ManagerOption
		granted bool
	}{
		{"unguarded", nil, true},
		{"guarded", []dlm.ManagerOption{dlm.WithRestartGuard(3 * time.Second)}, false},
		{"guarded+fencing", []dlm.ManagerOption{dlm.WithRestartGuard(3 * time.Second), dlm.WithFencing()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFencingCluster(t, append([]dlm.ManagerOption{dlm.WithTTL(3 * time.Second)}, tc.opts...)...)
			ctx := context.Background()
			if len(tc.opts) > 0 {
				// Every node is new to the guard: wait out its window once.
				time.Sleep(guardSettled(3 * time.Second))
			}
			c.do(t, []int{3, 4}, "SET", fencePrefix+"{k}", "someone-else", "PX", "60000")
			mark := c.mark()
			a, err := c.m.TryLock(ctx, "k")
			if err != nil {
				t.Fatalf("A's TryLock: %v", err)
			}
			defer a.Unlock(ctx)
			c.settle(t, mark, 1, 3, 4) // A's refused requests must not land after the DEL
			c.do(t, []int{3, 4}, "DEL", fencePrefix+"{k}")
			c.servers[2].Restart() // empty, at once
			b, err := c.m.TryLock(ctx, "k")
			if tc.granted {
				if err != nil {
					t.Fatalf("unguarded B's TryLock = %v; want the documented violation", err)
				}
				b.Unlock(ctx)
				t.Logf("without the guard B obtained the lock while A's was valid for %v more", time.Until(a.Until()).Round(time.Millisecond))
				return
			}
			if err == nil {
				b.Unlock(ctx)
				t.Fatal("guarded B obtained the lock from a node that had just restarted empty")
			}
			var nerr *dlm.NodeError
			if !errors.As(err, &nerr) || !errors.Is(nerr, dlm.ErrNodeRestarted) || nerr.Node != c.servers[2].Addr() {
				t.Errorf("guarded B's TryLock = %v; want ErrNodeRestarted from node 2", err)
			}
		})
	}
}

func TestRestartGuardWindowCoversTTL(t *testing.T) {
	t.Parallel()
	c := newFencingCluster(t)
	_, err := c.m.TryLock(context.Background(), "k", dlm.WithTTL(5*time.Second), dlm.WithRestartGuard(time.Second))
	if !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("TryLock with a guard window shorter than the TTL = %v; want ErrInvalid", err)
	}
}
