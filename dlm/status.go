package dlm

import (
	"context"
	"fmt"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// NodeStatus is what one node knows of a lock.
type NodeStatus struct {
	// Node is the node's address.
	Node string
	// Held reports whether the node holds the lock's key.
	Held bool
	// Reserved reports that no one holds the key on the node, but a
	// release handed it to a waiting caller, whose next attempt takes it:
	// the key stays reserved for at most two node timeouts. Held is false.
	Reserved bool
	// TTL is the key's remaining time to live on the node, when held.
	TTL time.Duration
	// Counter is the key's fencing counter on the node (0 without
	// fencing).
	Counter uint64
	// Owner is the holder's label, when it took the lock [WithOwner] and
	// the node holds it; the zero Owner otherwise.
	Owner Owner
	// Since is when the node granted the lock to the labelled holder, by
	// the node's clock; the zero Time without a label.
	Since time.Time
	// Err is the node's failure, if it did not answer.
	Err error
}

// Status asks every node about the lock named key, for tools and
// monitoring: which nodes hold it, for how much longer, and their fencing
// counters, and the holder's label and grant time when it took the lock
// [WithOwner]. It neither takes nor changes anything, and never reveals the
// holder's secret. Node failures are reported per node; the error is only for
// bad input or a closed manager.
func (m *Manager) Status(ctx context.Context, key string, opts ...Option) ([]NodeStatus, error) {
	cfg, rkeys, err := m.prepare(ctx, []string{key}, opts)
	if err != nil {
		return nil, err
	}
	out := make([]NodeStatus, len(m.nodes))
	req := &round.Request{Op: "status", Script: script.StatusOwner, Keys: []string{rkeys[0], script.FenceKey(rkeys[0])}, Timeout: cfg.timeout()}
	m.rounds.Each(ctx, req, func(i int, res any, err error) { out[i] = nodeStatus(m.nodes[i].addr, res, err) })
	return out, nil
}

// nodeStatus reads the status script's reply res, or failure err, of the
// node at addr.
func nodeStatus(addr string, res any, err error) NodeStatus {
	st := NodeStatus{Node: addr, Err: err}
	if err != nil {
		return st
	}
	vals, ok := res.([]any)
	// Five values, or three from a node that answers as the status script
	// before labels did (a test's fake node): no owner then.
	if !ok || len(vals) != 5 && len(vals) != 3 {
		st.Err = &NodeError{Node: addr, Err: fmt.Errorf("status script: unexpected reply of type %T", res)}
		return st
	}
	pttl, _ := vals[0].(int64)
	counter, _ := vals[1].(int64)
	reserved, _ := vals[2].(int64)
	st.Reserved = pttl != -2 && reserved == 1
	st.Held = pttl != -2 && !st.Reserved
	if pttl > 0 && st.Held {
		st.TTL = time.Duration(pttl) * time.Millisecond
	}
	if counter > 0 {
		st.Counter = uint64(counter)
	}
	if len(vals) < 5 {
		return st
	}
	if since, _ := vals[3].(int64); st.Held && since > 0 {
		label, _ := vals[4].(string)
		if o := parseOwner(label); o != (Owner{}) {
			st.Owner, st.Since = o, nodeTime(since)
		}
	}
	return st
}
