package redigo

import (
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// A panic inside redigo or a connection the user's pool made must fail the
// call on this node, never take the program down: every method that calls
// into them defers the RecoverTo of the node's panics, every Close runs
// under closeSafe, and the subscription's reader recovers as well. The
// connection a call borrowed is closed by its own deferred Close on the way
// out.
//
// A panic inside redigo's connection while it closes its socket (in Close,
// or when a read fails) leaves the connection's lock held, so that another
// Close would block for ever: a reader whose Receive panicked ends without
// closing its connection.

// panics recovers the node's panics, redacting its password.
func (n *node) panics() adapterkit.Panics {
	return adapterkit.Panics{Client: Name, Password: n.password}
}

// closeSafe calls close, with a panic in it turned into a
// [driver.PanicError].
func (n *node) closeSafe(close func() error) error { return n.panics().Close(close) }
