package redigo

import "github.com/dlmgo/redlock/dlm/driver"

// A panic inside redigo or a connection the user's pool made must fail the
// call on this node, never take the program down: every method that calls
// into them defers recoverTo, and the subscription's reader recovers as well.
// The connection a call borrowed is closed by its own deferred Close on the
// way out.

// recoverTo sets *err to a [driver.PanicError] when the caller panicked. It
// must be deferred directly.
func (n *node) recoverTo(err *error) {
	if r := recover(); r != nil {
		*err = driver.Recover(Name, r, n.password)
	}
}
