package dlm_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// nameNode is one name of an in-memory server: several nameNodes over one
// memlock.Node are one server under several addresses, as 127.0.0.1:P and
// localhost:P are. Each name can be made unreachable, or fail the probe of
// package dlm that tells whether two nodes are one server.
type nameNode struct {
	*memlock.Node
	addr      string
	down      atomic.Bool
	failProbe atomic.Bool
}

var errRefused = errors.New("dial tcp: connection refused")

func (n *nameNode) Addr() string { return n.addr }

func (n *nameNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if n.down.Load() || n.failProbe.Load() && s == script.ServerProbe {
		return nil, errRefused
	}
	return n.Node.Eval(ctx, s, keys, args)
}

// TestRunIDPlaceTakenNeverCountsOneServerTwice checks the invariant of the
// run_id comparison when a node takes the place of another that said the
// same run_id and did not confirm it: no vote counts one server twice.
// Nodes A and B are one server, C is down, so no lock may be granted:
// B, unreachable at Open, comes up during an attempt in which A has
// already granted; A fails the probe, B takes its place, and B's grant in
// that attempt must not count beside A's. Then A confirms: it is B's
// duplicate, and still no lock is granted.
func TestRunIDPlaceTakenNeverCountsOneServerTwice(t *testing.T) {
	t.Parallel()
	server := memlock.NewNode("server")
	a := &nameNode{Node: server, addr: "a:1"}
	b := &nameNode{Node: server, addr: "b:1"}
	c := memlock.NewNode("c:1")
	c.SetDown(true)
	b.down.Store(true)
	m, err := dlm.OpenNodes([]driver.Node{a, b, c}, dlm.WithTTL(10*time.Second), dlm.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("OpenNodes with one name of three unreachable = %v", err)
	}
	defer m.Close()
	ctx := context.Background()
	b.down.Store(false)
	a.failProbe.Store(true)
	for i, key := range []string{"while B takes A's place", "after", "again"} {
		if i == 1 {
			a.failProbe.Store(false) // A may now show it is B's server
		}
		l, err := m.TryLock(ctx, key)
		if err == nil {
			l.Unlock(ctx)
			t.Fatalf("TryLock(%s) with one server under two names and the third node down = a lock; the server counted twice", key)
		}
		t.Logf("TryLock(%s) = %v", key, err)
	}
	// A was shown to be B's server: a duplicate, for good.
	l, err := m.TryLock(ctx, "last")
	if err == nil {
		l.Unlock(ctx)
		t.Fatal("TryLock = a lock; want none")
	}
	if !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("TryLock once A confirmed it is B's server = %v; want A failing as a duplicate (ErrInvalid)", err)
	}
}
