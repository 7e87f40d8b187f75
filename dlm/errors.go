package dlm

import (
	"errors"
	"fmt"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotObtained means the lock is held by someone else: at least one
	// node holds the key under another token, so no quorum was reached.
	ErrNotObtained = errors.New("dlm: lock not obtained")
	// ErrLockLost means an Extend or Unlock found that the lock had expired
	// or no longer holds a quorum under this holder's token.
	ErrLockLost = errors.New("dlm: lock lost")
	// ErrUnavailable means too many nodes failed (errors or timeouts) for a
	// quorum to be possible, whoever holds the lock.
	ErrUnavailable = errors.New("dlm: quorum of nodes unavailable")
	// ErrInvalid is wrapped by every error for bad input: options, keys,
	// node lists. The operation made no round trip.
	ErrInvalid = errors.New("dlm: invalid argument")
	// ErrUnknownDriver means a node URL named a driver that is not
	// registered, or named none while several are.
	ErrUnknownDriver = errors.New("dlm: unknown driver")
	// ErrClosed means the Manager was closed.
	ErrClosed = errors.New("dlm: manager closed")
)

// NodeError is one node's failure: an error reply, a timeout, a refused
// connection. Node is the node's address, never its password. Find it in any
// error the package returns with errors.As.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return "node " + e.Node + ": " + e.Err.Error() }

// Unwrap returns the node's own error, so errors.Is(err,
// context.DeadlineExceeded) sees a node timeout.
func (e *NodeError) Unwrap() error { return e.Err }

// QuorumError reports a lock operation that did not reach a quorum, with the
// vote: how many nodes said yes, how many said no (another holder has the
// key, or this holder's key is gone), and how many failed. The vote stops
// counting once the outcome is certain, so the three may add up to fewer
// than Nodes. Its node failures are a *multierror.Error of [*NodeError] in
// the order the nodes were given.
//
// A node that timed out makes errors.Is(err, context.DeadlineExceeded) true
// even though the caller's context is live: tell them apart with
// [ErrUnavailable] or the caller's ctx.Err().
//
// errors.Is(err, ErrUnavailable) holds when failures alone made a quorum
// impossible; otherwise errors.Is(err, ErrNotObtained) holds for an acquire
// and errors.Is(err, ErrLockLost) for an extend or release.
type QuorumError struct {
	Op      string // "lock", "extend" or "unlock"
	Key     string // the lock's key as the caller gave it
	Nodes   int
	Quorum  int
	For     int
	Against int
	Failed  int
	// Expired is set when a quorum said yes but too late: the round trip
	// used up the validity.
	Expired bool
	// Err holds the node failures, or is nil when no node failed.
	Err error
}

func (e *QuorumError) Error() string {
	s := fmt.Sprintf("dlm: %s %q: %s: %d for, %d against, %d failed of %d nodes (quorum %d)",
		e.Op, e.Key, e.outcome(), e.For, e.Against, e.Failed, e.Nodes, e.Quorum)
	if e.Expired {
		s += "; validity used up before the quorum answered"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *QuorumError) outcome() string {
	switch {
	case e.unavailable():
		return "nodes unavailable"
	case e.Op == opLock:
		return "not obtained"
	default:
		return "lock lost"
	}
}

func (e *QuorumError) unavailable() bool { return e.Failed > e.Nodes-e.Quorum }

// Is reports whether target is the sentinel this outcome stands for.
func (e *QuorumError) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		return e.unavailable()
	case ErrNotObtained:
		return e.Op == opLock && !e.unavailable()
	case ErrLockLost:
		return e.Op != opLock && !e.unavailable()
	}
	return false
}

// Unwrap returns the node failures, so errors.As finds each [*NodeError].
func (e *QuorumError) Unwrap() error { return e.Err }
