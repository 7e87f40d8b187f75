package rueidis

import (
	"errors"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
)

// A panic inside rueidis must fail the call on this node, never take the
// program down. rueidis panics by design on some misuses: its command
// builder, on a cluster client, panics on a command whose keys hash to
// different slots ("multi key command with different key slots are not
// allowed"). Every method that calls into the client defers recoverTo, and
// every Close of a client or a dedicated connection runs under closeSafe.

// recoverTo sets *err to a [driver.PanicError] when the caller panicked. It
// must be deferred directly.
func (n *node) recoverTo(err *error) {
	if r := recover(); r != nil {
		*err = driver.Recover(Name, r, n.opt.Password)
	}
}

// newRueidisClient makes the clients of the nodes made from URLs; tests
// replace it.
var newRueidisClient = rueidisclient.NewClient

// newClient is rueidis.NewClient with a panic turned into an error.
func (n *node) newClient() (c rueidisclient.Client, err error) {
	defer n.recoverTo(&err)
	return newRueidisClient(n.opt)
}

// closeSafe calls close, with a panic in it turned into a
// [driver.PanicError].
func (n *node) closeSafe(close func()) (err error) {
	defer n.recoverTo(&err)
	close()
	return nil
}

// isPanic reports whether err is a [driver.PanicError].
func isPanic(err error) bool {
	var perr *driver.PanicError
	return errors.As(err, &perr)
}
