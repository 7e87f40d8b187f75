// Package adapterkit holds what the backend adapters (backends/goredis,
// backends/redigo, backends/rueidis) share beyond package driver's rules:
// panic recovery around a client library, the check of a server at Open,
// the shaping of errors and replies, and the bookkeeping of pub/sub
// subscriptions. Each adapter keeps only what its client library differs
// in.
//
// The backend modules import this package across modules, and a user's
// build may pair a backend with a later version of the core (the one module
// github.com/dlmgo/redlock that holds it): change its API only as that of a
// public package, in a compatible way.
package adapterkit
