package redigo

import (
	"errors"

	"github.com/dlmgo/redlock/dlm/driver"
)

// A panic inside redigo or a connection the user's pool made must fail the
// call on this node, never take the program down: every method that calls
// into them defers recoverTo, every Close runs under closeSafe, and the
// subscription's reader recovers as well. The connection a call borrowed is
// closed by its own deferred Close on the way out.
//
// A panic inside redigo's connection while it closes its socket (in Close,
// or when a read fails) leaves the connection's lock held, so that another
// Close would block for ever: a reader whose Receive panicked ends without
// closing its connection.

// recoverTo sets *err to a [driver.PanicError] when the caller panicked. It
// must be deferred directly.
func (n *node) recoverTo(err *error) {
	if r := recover(); r != nil {
		*err = driver.Recover(Name, r, n.password)
	}
}

// closeSafe calls close, with a panic in it turned into a
// [driver.PanicError].
func (n *node) closeSafe(close func() error) (err error) {
	defer n.recoverTo(&err)
	return close()
}

// isPanic reports whether err is a [driver.PanicError].
func isPanic(err error) bool {
	var perr *driver.PanicError
	return errors.As(err, &perr)
}
