package adapterkit

import (
	"context"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Library is a client library whose clients pipeline concurrent calls over
// a few shared connections, rueidis and its fork valkey-go, as a
// [Pipelined] node calls it: C is its client, D a connection of one that a
// caller has to itself (rueidis' DedicatedClient). Each method is one call
// into the library; the node runs it under its guard, with a panic turned
// into a [driver.PanicError], and tells error replies from other failures
// by ReplyError.
type Library[C, D comparable] interface {
	// Name is the driver's name, which starts its errors and is their
	// [driver.PanicError.Client].
	Name() string
	// Connect makes a client with o; it may connect at once.
	Connect(o *ClientOptions) (C, error)
	// Close closes c, waiting for its connections to close.
	Close(c C)
	// Nodes returns the clients of c's servers, by address.
	Nodes(c C) map[string]C
	// IsCluster reports whether c is in cluster mode.
	IsCluster(c C) bool

	// Eval sends EVALSHA s.Hash, or EVAL s.Source when source is set,
	// with keys and args through c, and returns the reply as [Normalize]
	// makes it. EvalOn does the same through d.
	Eval(ctx context.Context, c C, s *driver.Script, keys, args []string, source bool) (any, error)
	EvalOn(ctx context.Context, d D, s *driver.Script, keys, args []string, source bool) (any, error)
	// SetNXGet sends SET key val NX GET PX ms through c.
	SetNXGet(ctx context.Context, c C, key, val, ms string) (any, error)
	// Do sends the command args through c.
	Do(ctx context.Context, c C, args ...string) (any, error)
	// Dedicated calls f with a connection of c's that no other call uses
	// meanwhile: on a cluster client, to the master of the slot of the
	// first command's keys.
	Dedicated(c C, f func(d D) error) error
	// Wait sends WAIT replicas timeout through d, as a blocking command.
	Wait(ctx context.Context, d D, replicas int, timeout time.Duration) (int64, error)

	// Dedicate takes a connection of c's for a subscription and hooks h to
	// it: its messages, and the confirmations of subscriptions of kind
	// ("subscribe" or "ssubscribe"). ended receives at most one error and
	// is closed when the connection ends.
	Dedicate(c C, h driver.PubSubHandler, kind string) (d D, ended <-chan error)
	// PubSub sends cmd (SUBSCRIBE, UNSUBSCRIBE, SSUBSCRIBE or SUNSUBSCRIBE)
	// for channels through d.
	PubSub(ctx context.Context, d D, cmd string, channels ...string) error
	// CloseDedicated closes d.
	CloseDedicated(d D)

	// ReplyError returns the library's error reply in err's chain, or nil
	// when err is no error reply of the server (see [Find]).
	ReplyError(err error) error
}
