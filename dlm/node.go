package dlm

import (
	"github.com/dlmgo/redlock/dlm/driver"
)

// node is one of a manager's nodes, with all the manager keeps of it: its
// address, what it can do beyond [driver.Node], and the state of its
// requests. Its number, i, is its place in Manager.nodes: the quorum
// rounds, their votes and the waker, which know no node value, name a node
// by it.
type node struct {
	i    int
	drv  driver.Node
	addr string // drv.Addr(), read once
	// cluster is set when the node says it is a whole Redis Cluster
	// ([driver.Sharded]): its scripts run on the master of their keys'
	// slot (slot.go).
	cluster bool
	// The optional interfaces the node implements, asked once, as it was
	// given: nil where it does not.
	setter driver.Setter       // SET NX GET in place of the acquire script (setnx.go)
	acker  driver.ReplicaAcker // WAIT after a write, for WithReplicaAck (replicaack.go)
	// plain is the node's state for the plain acquire (setnx.go).
	plain plainState
}

// newNode returns node i of a manager, d, which is not nil.
func newNode(i int, d driver.Node) *node {
	n := &node{i: i, drv: d, addr: d.Addr()}
	if s, ok := d.(driver.Sharded); ok && s.Sharded() {
		n.cluster = true
	}
	n.setter, _ = d.(driver.Setter)
	n.acker, _ = d.(driver.ReplicaAcker)
	return n
}

// driverNodes returns the driver.Node of each of nodes, in order.
func driverNodes(nodes []*node) []driver.Node {
	out := make([]driver.Node, len(nodes))
	for i, n := range nodes {
		out[i] = n.drv
	}
	return out
}
