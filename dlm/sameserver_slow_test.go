package dlm_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// slowFirstNode is an in-memory node whose requests take slow until one of
// them has been waited for to its end, as over a link where connecting, the
// handshake and a request each take a round trip, and a client drops a
// connection whose request timed out: only a request given the time to
// connect leaves a connection for the next, which are then prompt.
type slowFirstNode struct {
	*memlock.Node
	slow      time.Duration
	connected atomic.Bool
}

func (n *slowFirstNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if !n.connected.Load() {
		select {
		case <-time.After(n.slow):
			n.connected.Store(true)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return n.Node.Eval(ctx, s, keys, args)
}

// TestSlowFirstContactStillCounts checks that a node whose first contact
// takes longer than the node timeout (here every node's: Open's asking of
// the servers' run_ids gives up on them) is identified all the same and
// counts from then on: the run_id question is not bounded by one request's
// node timeout, or such a node would be asked again by every request, and
// fail every one, for good.
func TestSlowFirstContactStillCounts(t *testing.T) {
	t.Parallel()
	var nodes []driver.Node
	for i := range 3 {
		nodes = append(nodes, &slowFirstNode{Node: memlock.NewNode(fmt.Sprintf("n%d:1", i)), slow: 300 * time.Millisecond})
	}
	m, err := dlm.OpenNodes(nodes, dlm.WithTTL(2*time.Second), dlm.WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("OpenNodes = %v", err)
	}
	defer m.Close()
	// The question runs on beyond a request's node timeout: within a few
	// of them a lock is granted.
	deadline := time.Now().Add(10 * time.Second)
	for attempts := 1; ; attempts++ {
		l, err := m.TryLock(context.Background(), "k")
		if err == nil {
			if err := l.Unlock(context.Background()); err != nil {
				t.Errorf("Unlock = %v", err)
			}
			t.Logf("granted at attempt %d", attempts)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("TryLock still failing after %d attempts in 10s: %v", attempts, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
