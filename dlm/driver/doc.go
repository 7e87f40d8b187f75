// Package driver defines the interfaces a Redis client adapter implements to
// serve as a node of a [github.com/dlmgo/redlock/dlm.Manager].
//
// It plays the part database/sql/driver plays for database/sql: user code
// depends on package dlm and its concrete types, adapters depend only on this
// package. The required interface, [Node], is deliberately small: it runs a
// Lua [Script] on one Redis master and closes. Everything the lock algorithm
// does lives in package dlm, which owns every script; an adapter never embeds
// lock logic.
//
// Extra powers are optional interfaces, detected by package dlm with a type
// assertion at the call site, each documenting what happens without it:
// [Pinger], [Subscriber], [Sharded], [ReplicaAcker], [Setter].
//
// # Panics
//
// A panic inside a client library must never escape an adapter: recover it
// around every call into the client, on every goroutine the node starts,
// and return [Recover]'s [*PanicError], which package dlm counts as the
// node's failure.
//
// # Replies
//
// [Node.Eval] normalizes a script's reply to this small set of Go types, so
// the core never sees a client library's own reply types:
//
//	Redis reply                      Go value
//	nil bulk string, nil array       nil
//	Lua false                        nil (Redis converts it to a nil bulk)
//	integer, Lua true                int64 (true is 1)
//	bulk string, status reply        string
//	array                            []any of these types (an empty
//	                                 array is a []any of length 0,
//	                                 never a nil interface)
//	error reply                      a non-nil error whose message starts
//	                                 with the Redis error code ("ERR ...")
//
// The conformance suite in package dlmtest checks these rules against a real
// redis-server.
//
// # URLs
//
// [Driver.Open] receives the whole node URL. [ParseURL] reads the parts every
// driver supports — user, password, database, TLS and timeouts, and whether
// the node is a Redis Cluster or a master found through Sentinel — so an
// adapter turns a [Config] into its client's options and nothing more.
package driver
