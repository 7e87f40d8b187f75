package rueidis

import (
	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
)

var _ driver.Sharded = (*node)(nil)

// Sharded reports whether the node's client is in cluster mode: package dlm
// then refuses, up front, locks over keys of several hash slots. A node
// made by Open is one master (ForceSingleClient).
func (n *node) Sharded() bool { return n.sharded }

// isCluster reports whether c is a rueidis client in cluster mode. rueidis
// does not say so, but its cluster clients' command builder refuses keys of
// different slots, by a panic: build, never send, a command over keys "a"
// (slot 15495) and "b" (slot 3300) and see.
func isCluster(c rueidisclient.Client) (cluster bool) {
	defer func() {
		if recover() != nil {
			cluster = true
		}
	}()
	c.B().Mget().Key("a", "b").Build()
	return false
}
