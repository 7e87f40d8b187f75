package dlm

import (
	"context"
	"fmt"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// NodeStatus is what one node knows of a lock.
type NodeStatus struct {
	// Node is the node's address.
	Node string
	// Held reports whether the node holds the lock's key.
	Held bool
	// TTL is the key's remaining time to live on the node, when held.
	TTL time.Duration
	// Counter is the key's fencing counter on the node (0 without
	// fencing).
	Counter uint64
	// Err is the node's failure, if it did not answer.
	Err error
}

// Status asks every node about the lock named key, for tools and
// monitoring: which nodes hold it, for how much longer, and their fencing
// counters. It neither takes nor changes anything, and never reveals the
// holder's secret. Node failures are reported per node; the error is only for
// bad input or a closed manager.
func (m *Manager) Status(ctx context.Context, key string, opts ...Option) ([]NodeStatus, error) {
	cfg, rkeys, err := m.prepare(ctx, []string{key}, opts)
	if err != nil {
		return nil, err
	}
	out := make([]NodeStatus, len(m.nodes))
	m.work.ForEach(len(m.nodes), func(i int) { out[i] = m.inspect(ctx, &cfg, i, rkeys[0]) })
	return out, nil
}

func (m *Manager) inspect(ctx context.Context, cfg *config, i int, rkey string) NodeStatus {
	st := NodeStatus{Node: m.addrs[i]}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout())
	defer cancel()
	if err := m.admit(ctx, i); err != nil {
		st.Err = &NodeError{Node: m.addrs[i], Err: err}
		return st
	}
	res, err := m.nodes[i].Eval(ctx, script.Status, []string{rkey, script.FenceKey(rkey)}, nil)
	if err != nil {
		st.Err = &NodeError{Node: m.addrs[i], Err: err}
		return st
	}
	vals, ok := res.([]any)
	if !ok || len(vals) != 2 {
		st.Err = &NodeError{Node: m.addrs[i], Err: fmt.Errorf("status script: unexpected reply of type %T", res)}
		return st
	}
	pttl, _ := vals[0].(int64)
	fence, _ := vals[1].(int64)
	st.Held = pttl != -2
	if pttl > 0 {
		st.TTL = time.Duration(pttl) * time.Millisecond
	}
	if fence > 0 {
		st.Counter = uint64(fence)
	}
	return st
}
