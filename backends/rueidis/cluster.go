package rueidis

import (
	"slices"
	"strings"
	"time"

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

// newClusterNode returns a node with a client of its own in cluster mode,
// over opt with the seed addresses opt.InitAddress, which the node's Close
// closes. Its Addr is the seeds, sorted and joined by commas. The client
// dials through the node's conns, so that Close ends every connection. A
// cluster that cannot be reached is connected to on first use; Open's
// check is that of a single server (node.open).
func newClusterNode(cfg *driver.Config, opt rueidisclient.ClientOption) (*node, error) {
	addrs := slices.Clone(opt.InitAddress)
	slices.Sort(addrs)
	n := &node{
		addr: strings.Join(addrs, ","), owned: true, sharded: true, opt: opt, conns: &conns{}, closeGrace: cfg.WriteTimeout,
		born: time.Now(), healthyWindow: cfg.WriteTimeout / 2,
	}
	n.opt.ForceSingleClient = false
	n.opt.DialFn = n.conns.dial
	if err := n.open(cfg); err != nil {
		return nil, err
	}
	return n, nil
}
