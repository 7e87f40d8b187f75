// Package adapterkit holds what the backend adapters (backends/goredis,
// backends/redigo, backends/rueidis, backends/valkeygo) share beyond
// package driver's rules, so that each holds only the calls into its
// client library: panic recovery around a client library, the check of a
// server at Open, the shaping of errors and replies, the gate that keeps
// calls from outliving a node's Close, the life of pub/sub subscriptions
// and the bookkeeping of sharded ones.
//
// For a client library whose clients pipeline concurrent calls over a few
// shared connections, rueidis and its fork valkey-go, the kit holds the
// whole node, [Pipelined]: the options from a node URL, connecting on first
// use, the guard against a server that went silent, a Close bounded by the
// write timeout, replies and error replies, EvalAck, and the subscriptions,
// sharded on a Cluster. Such a backend is a [Library]: one method per call
// into its client.
//
// The backend modules import this package across modules, and a user's
// build may pair a backend with a later version of the core (the one module
// github.com/dlmgo/redlock that holds it): change its API only as that of a
// public package, in a compatible way.
package adapterkit
