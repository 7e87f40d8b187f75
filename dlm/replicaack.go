package dlm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// ErrReplicaAck is a node's failure under [WithReplicaAck] when its write
// did not reach enough replicas in time: the node is not counted toward the
// quorum, and the attempt is released there like any failed one. Find it
// with errors.Is inside a [*NodeError].
var ErrReplicaAck = errors.New("dlm: write not acknowledged by enough replicas in time")

// replicaAck is what WithReplicaAck asks.
type replicaAck struct {
	replicas int
	timeout  time.Duration
}

// WithReplicaAck makes a node count a grant, an extension or a raise of
// fencing counters — of a lock, a write lock, a read lock or a semaphore's
// permit — only once replicas of its replicas acknowledged the write,
// within timeout: after the script, on the same connection, the node
// sends WAIT replicas timeout. A node whose write is acknowledged by fewer
// fails the request with [ErrReplicaAck]. Every node must implement
// [driver.ReplicaAcker] (the four backends do), or the call fails with
// [ErrInvalid]. timeout must be at least a millisecond and below the node
// timeout, which bounds the whole request.
//
// What it guarantees: when a node counted, its write was in the memory of
// that many replicas, so a failover of that node to one of them (Sentinel,
// a managed service, Redis Cluster) keeps the lock key — the fault Redisson
// deprecated its RedLock over. What it does not: WAIT is not consensus. A
// failover may still promote a replica that had not acknowledged (one that
// was lagging, or beyond the n that answered), writes are not made durable
// on disk, the replicas may lose them in a restart of their own, and a
// write that timed out may still reach them later. Nor does it slow a
// release (a lost release only leaves a key to expire). Use it to narrow
// the window of a failover losing a lock, not as a replacement for
// independent masters; see docs/operations.md.
//
// It is an option of the Manager ([New], [Open]), for every call: a
// [ManagerOption] only, which no single call accepts.
func WithReplicaAck(replicas int, timeout time.Duration) ManagerOption {
	return managerOption(func(c *config) { c.replicaAck = &replicaAck{replicas: replicas, timeout: timeout} })
}

func (c *config) validateReplicaAck() error {
	a := c.replicaAck
	switch {
	case a == nil:
		return nil
	case a.replicas < 1:
		return fmt.Errorf("%w: replica ack of %d replicas: want at least 1", ErrInvalid, a.replicas)
	case a.timeout < time.Millisecond:
		return fmt.Errorf("%w: replica ack timeout %v: want at least 1ms (WAIT 0 blocks for ever)", ErrInvalid, a.timeout)
	case a.timeout >= c.timeout():
		return fmt.Errorf("%w: replica ack timeout %v is not below the node timeout %v", ErrInvalid, a.timeout, c.timeout())
	}
	return nil
}

// checkAck returns ErrInvalid when a, the manager's WithReplicaAck (nil
// for none), asks for replica acks and a node cannot give them.
func (ns nodeSet) checkAck(a *replicaAck) error {
	if a == nil {
		return nil
	}
	for _, n := range ns {
		if n.acker == nil {
			return fmt.Errorf("%w: WithReplicaAck: node %s (%T) does not implement driver.ReplicaAcker", ErrInvalid, n.addr, n.drv)
		}
	}
	return nil
}

// ackedScripts are the scripts whose writes WithReplicaAck waits for: every
// grant (the mutex's and write lock's acquire scripts, a read lock's, a
// semaphore permit's), every extension, alone or batched, and the raise of
// fencing counters.
// Releases, the fair line's departures and inspections are not among them.
var ackedScripts = func() map[*driver.Script]bool {
	set := map[*driver.Script]bool{
		script.Extend: true, script.ReadExtend: true, script.PermitExtend: true, script.ExtendBatch: true, script.RaiseFence: true,
		script.ReadAcquire: true, script.GuardedReadAcquire: true,
		script.PermitAcquire: true, script.GuardedPermitAcquire: true,
	}
	for _, s := range acquireScripts {
		set[s] = true
	}
	return set
}()

// acked reports whether req writes what WithReplicaAck waits for: a grant,
// an extension, or a raise of fencing counters.
func acked(req *round.Request) bool { return ackedScripts[req.Script] }

// ackCall is n's call under WithReplicaAck a: a request that writes what a
// waits for ([acked]) runs with WAIT, and a write acknowledged by too few
// replicas is the node's failure; any other goes to next. args gives the
// node's arguments.
func ackCall(n *node, a *replicaAck, args func(*round.Request) []string, next round.Call) round.Call {
	ra := n.acker
	return func(ctx context.Context, req *round.Request) (any, error) {
		if !acked(req) {
			return next(ctx, req)
		}
		if ra == nil { // checked by New
			return nil, fmt.Errorf("node does not implement driver.ReplicaAcker")
		}
		v, got, err := ra.EvalAck(ctx, req.Script, req.Keys, args(req), a.replicas, a.timeout)
		if err != nil {
			return nil, err
		}
		if got < int64(a.replicas) && wrote(req, v) {
			return nil, fmt.Errorf("%w: %d of %d replicas within %v", ErrReplicaAck, got, a.replicas, a.timeout)
		}
		return v, nil
	}
}

// wrote reports whether a reply to req says the script wrote: a positive
// number, a fair acquire's {positive, ticket}, or a batch's reply with a
// positive number for any entry — a batch acknowledged by too few replicas
// fails on the node for every lock it carries, as each lock's own
// extension would have.
func wrote(req *round.Request, v any) bool {
	if arr, ok := v.([]any); ok && req.Entries > 0 {
		for _, e := range arr {
			if n, ok := e.(int64); ok && n > 0 {
				return true
			}
		}
		return false
	}
	if pair, ok := v.([]any); ok && len(pair) == 2 {
		v = pair[0]
	}
	n, ok := v.(int64)
	return ok && n > 0
}
