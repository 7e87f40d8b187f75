package rueidis

import (
	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/internal/adapterkit"
)

// A panic inside rueidis must fail the call on this node, never take the
// program down. rueidis panics by design on some misuses: its command
// builder, on a cluster client, panics on a command whose keys hash to
// different slots ("multi key command with different key slots are not
// allowed"). Every method that calls into the client defers the RecoverTo
// of the node's panics, and every Close of a client or a dedicated
// connection runs under closeSafe.

// panics recovers the node's panics, redacting its password.
func (n *node) panics() adapterkit.Panics {
	return adapterkit.Panics{Client: Name, Password: n.opt.Password}
}

// newRueidisClient makes the clients of the nodes made from URLs; tests
// replace it.
var newRueidisClient = rueidisclient.NewClient

// newClient is rueidis.NewClient with a panic turned into an error.
func (n *node) newClient() (c rueidisclient.Client, err error) {
	defer n.panics().RecoverTo(&err)
	return newRueidisClient(n.opt)
}

// closeSafe calls close, with a panic in it turned into a
// [driver.PanicError].
func (n *node) closeSafe(close func()) error { return n.panics().Do(close) }
