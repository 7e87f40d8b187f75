package dlm

import (
	"context"
	"strings"

	"github.com/dlmgo/redlock/dlm/internal/round"
)

// redirectCodes start the error replies of a Redis Cluster member asked
// for a key of a slot it does not serve: MOVED for a slot another member
// owns, ASK for one being migrated to it.
var redirectCodes = []string{"MOVED ", "ASK "}

// isRedirect reports whether err is, or wraps, a MOVED or ASK reply.
// Adapters return replies as errors whose message starts with the code;
// wrappers may put text before it.
func isRedirect(err error) bool {
	msg := err.Error()
	for _, p := range redirectCodes {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, ": "+p) {
			return true
		}
	}
	return false
}

// redirectError is the failure of a node that is a member of a Redis
// Cluster but was not opened as one: it redirected a request to another
// member. A client of one server does not follow redirections, so every
// request for a key of the other members' slots fails the same way:
// a configuration error, which [NodeError] reports as [ErrInvalid], and
// which retrying cannot fix.
type redirectError struct{ err error }

func (e *redirectError) Error() string {
	return e.err.Error() + " (the node is a member of a Redis Cluster, opened as a single server: " +
		"open the cluster as one node, with ?cluster=true in its URL, or give the backend a cluster client)"
}

func (e *redirectError) Unwrap() error { return e.err }

// redirectCall runs next, and returns its failure as a [*redirectError]
// when it is a redirection: next is the call of a node that does not say
// it is a Redis Cluster ([driver.Sharded]). A cluster client follows
// redirections itself; one that returns one gave up during a resharding,
// which may pass, so a cluster node's calls are not wrapped.
func redirectCall(next round.Call) round.Call {
	return func(ctx context.Context, req *round.Request) (any, error) {
		v, err := next(ctx, req)
		if err != nil && isRedirect(err) {
			return v, &redirectError{err}
		}
		return v, err
	}
}
