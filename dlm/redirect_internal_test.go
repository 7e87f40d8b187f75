package dlm

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// redirectingNode answers every script with a redirection to another
// cluster member, as a member asked for a key of a slot it does not serve
// does; sharded says whether it is a client of the whole cluster.
type redirectingNode struct {
	*fakeNode
	reply    string
	sharded  bool
	acquires *atomic.Int32
}

func (n redirectingNode) Sharded() bool { return n.sharded }

func (n redirectingNode) Eval(_ context.Context, s *driver.Script, _, _ []string) (any, error) {
	if s == script.Acquire {
		n.acquires.Add(1)
	}
	return nil, errors.New(n.reply)
}

// TestRedirectIsInvalid checks that a MOVED or ASK reply from a node that
// is not a Redis Cluster client fails Lock after one attempt with
// ErrInvalid and the hint to open it with cluster=true, and that the same
// reply from a cluster client ([driver.Sharded]), which follows
// redirections itself and returns one only when it gave up during a
// resharding, is a node failure like any other, retried.
func TestRedirectIsInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reply   string
		sharded bool
		invalid bool
	}{
		{"MOVED 3999 127.0.0.1:6381", false, true},
		{"ASK 3999 127.0.0.1:6381", false, true},
		{"MOVED 3999 127.0.0.1:6381", true, false},
		{"ERR MOVED is not a command here", false, false},
	} {
		n := redirectingNode{newFakeNode(0), tc.reply, tc.sharded, new(atomic.Int32)}
		m, err := New([]driver.Node{n}, WithRetry(3, FixedBackoff(time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Lock(context.Background(), "k")
		m.Close()
		attempts := int(n.acquires.Load())
		hint := strings.Contains(err.Error(), "cluster=true")
		if errors.Is(err, ErrInvalid) != tc.invalid || hint != tc.invalid {
			t.Errorf("Lock on a node answering %q (sharded: %v) = %v; want ErrInvalid with the cluster=true hint: %v", tc.reply, tc.sharded, err, tc.invalid)
		}
		if want := map[bool]int{true: 1, false: 3}[tc.invalid]; attempts != want {
			t.Errorf("Lock on a node answering %q (sharded: %v) made %d attempts; want %d", tc.reply, tc.sharded, attempts, want)
		}
	}
}
