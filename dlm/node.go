package dlm

import (
	"context"
	"fmt"
	"strings"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
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
	// ident is what the node's server said it is (sameserver.go).
	ident identity
	// sender sends the node the extender's batches of extensions
	// (sender.go), set when the manager is made.
	sender *nodeSender
	// call is the node's call for the quorum rounds (see [nodeCall]), set
	// once when the manager is made.
	call round.Call
}

// nodeSet is a manager's nodes, by node number: what it asks of all of
// them at once.
type nodeSet []*node

// newNode returns node i of a manager, d, which is not nil.
func newNode(i int, d driver.Node) *node {
	n := &node{i: i, drv: d, addr: d.Addr()}
	n.ident.state.Store(idUnsaid) // until the manager asks (askServers)
	if s, ok := d.(driver.Sharded); ok && s.Sharded() {
		n.cluster = true
	}
	n.setter, _ = d.(driver.Setter)
	n.acker, _ = d.(driver.ReplicaAcker)
	return n
}

// drivers returns the driver.Node of each node, in order.
func (ns nodeSet) drivers() []driver.Node {
	out := make([]driver.Node, len(ns))
	for i, n := range ns {
		out[i] = n.drv
	}
	return out
}

// addrs returns the address of each node, in order.
func (ns nodeSet) addrs() []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.addr
	}
	return out
}

// nodeCall builds n's call for the quorum rounds, once per manager: the
// node's Eval, with around it what the node and the manager's options add
// (ack, the manager's WithReplicaAck, nil without; plain, its plain
// acquire, nil when no node can; s, the comparison of its servers), from
// the outside in:
//   - the removal of the request's arguments from the node's failure, which
//     may quote them (hideargs.go);
//   - the run_id admission: a node's answers count only once its server
//     said which it is (sameserver.go);
//   - the redirect check: a member of a Redis Cluster opened as a single
//     server fails as misconfigured (redirect.go);
//   - SET NX GET in place of the acquire script, on a node that implements
//     driver.Setter (setnx.go);
//   - WAIT for replica acknowledgements under WithReplicaAck
//     (replicaack.go);
//   - the arguments: announce's flag made Sharded on a node that is a
//     Redis Cluster (slot.go).
//
// The round itself wraps a node's failure in a [*NodeError].
func nodeCall(n *node, ack *replicaAck, plain *plainAcquire, s *servers) round.Call {
	args := nodeArgs(n)
	call := evalCall(n.drv, args)
	if ack != nil {
		call = ackCall(n, ack, args, call)
	}
	if plain != nil && n.setter != nil {
		call = plain.call(n, call)
	}
	if !n.cluster {
		call = redirectCall(call)
	}
	return hideArgs(args, s.admitCall(n.i, call))
}

// calls returns the call of each node, in order, as the rounds take them.
func (ns nodeSet) calls() []round.Call {
	out := make([]round.Call, len(ns))
	for i, n := range ns {
		out[i] = n.call
	}
	return out
}

// evalCall runs the request's script on n with the arguments args gives.
func evalCall(n driver.Node, args func(*round.Request) []string) round.Call {
	return func(ctx context.Context, req *round.Request) (any, error) {
		v, err := n.Eval(ctx, req.Script, req.Keys, args(req))
		return v, unauthenticated(err)
	}
}

// unauthenticated returns err as a NOAUTH refusal when it is the one Redis
// gives a client that sent no password a command of more than ten
// arguments, as most of the scripts' calls are, instead of NOAUTH: without
// a password set, the node requires one. Any other err is returned as it
// is.
func unauthenticated(err error) error {
	if err != nil && strings.Contains(err.Error(), "Protocol error: unauthenticated multibulk length") {
		return fmt.Errorf("NOAUTH Authentication required (%w)", err)
	}
	return err
}

// nodeError is the failure err of node i, as the round reports it.
func (ns nodeSet) nodeError(i int, err error) error {
	return &NodeError{Node: ns[i].addr, Err: err}
}
