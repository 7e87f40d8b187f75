package driver

import (
	"context"
	"time"
)

// ReplicaAcker is an optional interface a [Node] implements so that package
// dlm can ask, with WithReplicaAck, that a grant or extension reach the
// node's replicas before it counts. Without it, a manager or call with
// that option fails with ErrInvalid before any request.
type ReplicaAcker interface {
	// EvalAck runs s as [Node.Eval] does and then, on the same connection
	// and only when the script returned a reply, sends WAIT replicas
	// timeout. It returns the script's reply and WAIT's: the number of
	// replicas that acknowledged every write the connection made so far.
	// timeout is at least a millisecond (WAIT 0 would block for ever). On a
	// Redis Cluster the WAIT goes to the master that ran the script.
	EvalAck(ctx context.Context, s *Script, keys, args []string, replicas int, timeout time.Duration) (v any, acked int64, err error)
}
