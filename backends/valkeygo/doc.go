// Package valkeygo runs the nodes of a [github.com/dlmgo/redlock/dlm.Manager]
// on [github.com/valkey-io/valkey-go] clients, for Valkey servers (and Redis
// servers: the protocol is the same).
//
// A blank import registers the driver under [Name], for node URLs with the
// schemes "redis+valkey://" and "rediss+valkey://" (TLS):
//
//	import _ "github.com/dlmgo/redlock/backends/valkeygo"
//
//	m, err := dlm.Open([]string{
//		"redis+valkey://:secret@10.0.0.1:6379/0",
//		"redis+valkey://10.0.0.2:6379?dial_timeout=100ms",
//		"rediss+valkey://user:secret@10.0.0.3:6380",
//	})
//
// The URLs take the parameters of every backend's: cluster=true with addr=
// for a Valkey or Redis Cluster, sentinel_master= for a master found through
// Sentinel, TLS, and an ACL user and password. Nodes of this backend mix
// with those of the others in one manager.
//
// To use a client you already have, wrap it; the node shares the client and
// does not close it:
//
//	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"10.0.0.1:6379"}})
//	node := valkeygo.NewNode(c)
//	m, err := dlm.New([]driver.Node{node, ...})
//
// A client in cluster mode makes the node a whole cluster: locks over
// several keys must then name keys of one hash slot (docs/operations.md).
//
// valkey-go is a fork of rueidis, and the node is the one the rueidis
// backend runs, [github.com/dlmgo/redlock/backends/rueidis]: this package
// holds only the calls into valkey-go.
//
// # Clients from URLs
//
// [Driver.Open] makes one client per node: a single-node client (a cluster
// client for cluster=true, a Sentinel client for sentinel_master=NAME) with
// client-side caching off and every call pipelined; calls share it, and the
// node never holds a connection for itself but for WAIT and pub/sub. A
// server that cannot be reached at Open is connected to on first use.
// dial_timeout bounds the dial and the handshake, and write_timeout becomes
// ConnWriteTimeout, which bounds writes and the PING by which valkey-go
// finds a silent connection; read_timeout and pool_size are accepted but
// unused.
//
// Every call returns when its context is done, with an error that wraps
// ctx.Err(). A node whose server has not answered lately runs its calls on a
// goroutine of its own, since valkey-go dials a broken connection again
// inside the next call, bounded by the dial timeout only. A node opened
// from a URL makes a dial that outlasts the call that started it to its
// end, within the node's life and the dial timeout, so that the connection
// serves the next calls. Close waits at most the write timeout for the
// server's answer to QUIT.
//
// valkey-go speaks RESP3, whose replies the node maps to what RESP2 would
// have sent, so that the core sees the same values from every backend.
//
// # Servers it is tested against
//
// The test suites run against redis-server 7.0, which Valkey continues
// (Valkey 7.2 speaks the same protocol and runs the same Lua scripts);
// Debian's packages, on which the suites run, have no valkey-server.
//
// # Client version
//
// The module requires valkey-go v1.0.79 and so declares go 1.25, as that
// release does; the core keeps go 1.22. A program that requires an older
// valkey-go gets v1.0.79 through this module.
package valkeygo
