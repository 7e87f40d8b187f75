package driver

import "context"

// Setter is an optional interface a [Node] may implement: the plain command
// by which package dlm takes a free lock key without running a script. A
// script call costs the server several times what a plain SET does, and
// the servers' work is much of an uncontended lock's cost, so a node that
// implements Setter makes the common lock cheaper. Without it, every
// acquire runs its script.
//
// Package dlm uses it only for a lock over one key, without fencing,
// fairness, the restart guard or replica acknowledgements, only on a node
// that has run the acquire script once, and only while the manager has not
// seen the key refused (docs/design.md, "The plain acquire"). When SetNXGet
// fails with an error while the script, sent in its place, answers (a
// Redis before 7.0, an ACL without SET), dlm sends that node only the
// script for a while.
type Setter interface {
	// SetNXGet sets key to value with a TTL of ms milliseconds when key
	// does not exist, and then answers nil; otherwise it leaves key as it
	// is and answers the string key holds. One command does both, SET key
	// value NX GET PX ms (Redis 7.0 or later); an adapter may also send
	// SET key value NX PX ms and, only when that finds the key held, GET
	// key, answering "" when the key expired in between. Replies, errors
	// and ctx are handled as [Node.Eval] handles them: a server's error
	// reply (a Redis before 7.0 refuses NX with GET) is returned as an
	// error, and so is a key that holds another type than a string
	// (WRONGTYPE).
	SetNXGet(ctx context.Context, key, value, ms string) (any, error)
}
