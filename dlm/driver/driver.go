package driver

import "context"

// Driver opens nodes from URLs. Adapters register a Driver with
// [github.com/dlmgo/redlock/dlm.Register], usually in an init function, under
// the name that appears in URL schemes such as "redis+NAME://".
type Driver interface {
	// Open connects to the Redis master described by url. The URL is given
	// whole, scheme included; [ParseURL] reads it. Open should not block on
	// the network longer than the URL's dial timeout.
	Open(url string) (Node, error)
}

// Node is one independent Redis master. A Node is used by many goroutines at
// once and must be safe for concurrent use.
type Node interface {
	// Eval runs s on the node with the given keys and arguments. It sends
	// EVALSHA with s.Hash and, when the node answers NOSCRIPT, sends EVAL
	// with s.Source. The reply is normalized as the package documentation
	// describes.
	//
	// Eval must return when ctx is done, with an error that wraps ctx.Err(),
	// even if the node does not answer. For a context of [WithNodeDeadline],
	// which can end only at its deadline while Eval runs, a socket deadline
	// taken from the context meets this without watching for a
	// cancellation (see [DeadlineOnly]).
	Eval(ctx context.Context, s *Script, keys []string, args []string) (any, error)

	// Addr names the node in errors and logs: host and port, never a
	// password.
	Addr() string

	// Close releases what the Node owns. A Node that wraps a client the user
	// passed in must not close that client.
	Close() error
}

// Pinger is an optional interface a [Node] may implement, for health checks
// by tools and by the dlmtest conformance suite. Package dlm does not need it:
// without it, a node's health is seen through the replies to lock
// operations.
type Pinger interface {
	// Ping checks that the node answers. It returns when ctx is done.
	Ping(ctx context.Context) error
}
