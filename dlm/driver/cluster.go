package driver

// Sharded is an optional interface a [Node] implements when it may be a
// whole Redis Cluster deployment (go-redis' ClusterClient, a rueidis client
// in cluster mode), whose keys are spread over hash slots: every script's
// keys must then fall in one slot, and a node that receives keys of
// several slots fails (CROSSSLOT, or a panic in some client libraries).
//
// Package dlm asks it when a Manager is made. When any node reports true,
// a lock over several keys must name keys that share a hash slot (a common
// "{tag}"), and a call with keys in different slots fails with ErrInvalid
// before any request. Without Sharded, a node is taken to be one master,
// where keys may span slots.
type Sharded interface {
	// Sharded reports whether the node spreads its keys over the hash
	// slots of a cluster.
	Sharded() bool
}
