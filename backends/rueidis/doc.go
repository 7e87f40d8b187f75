// Package rueidis runs the nodes of a [github.com/dlmgo/redlock/dlm.Manager]
// on [github.com/redis/rueidis] clients.
//
// A blank import registers the driver under [Name], for node URLs with the
// schemes "redis+rueidis://" and "rediss+rueidis://" (TLS):
//
//	import _ "github.com/dlmgo/redlock/backends/rueidis"
//
//	m, err := dlm.Open([]string{
//		"redis+rueidis://:secret@10.0.0.1:6379/0",
//		"redis+rueidis://10.0.0.2:6379?dial_timeout=100ms",
//		"rediss+rueidis://user:secret@10.0.0.3:6380",
//	})
//
// To use a client you already have, wrap it; the node shares the client and
// does not close it:
//
//	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"10.0.0.1:6379"}})
//	node := redlockrueidis.NewNode(c)
//	m, err := dlm.New([]driver.Node{node, ...})
//
// A client in cluster mode makes the node a whole Redis Cluster: locks over
// several keys must then name keys of one hash slot (docs/operations.md).
//
// The package names itself rueidis like the client library, so code that uses
// both imports one of them under another name.
//
// # Clients from URLs
//
// [Driver.Open] makes one client per node: a single-node client (a cluster
// client only for a URL with cluster=true, whose addr parameters add seed
// addresses; a Sentinel client for sentinel_master=NAME) with client-side
// caching off and every call pipelined. Calls share the client; rueidis
// batches concurrent calls onto a few connections, and the node never holds a
// connection for itself. Open connects at once; a server that cannot be
// reached does not fail Open but is connected to on first use, so a manager
// can start while a minority of its nodes is down. Of the URL's settings,
// dial_timeout bounds the dial and the handshake, and write_timeout becomes
// ConnWriteTimeout, which bounds writes and the PING by which rueidis finds a
// silent connection; read_timeout and pool_size have no rueidis counterpart
// and are accepted but unused (the context bounds each call, and rueidis
// pipelines over a few connections instead of pooling).
//
// # Open
//
// [Driver.Open] checks the server as every backend does, with
// [driver.CheckOpen]: a server that cannot be reached, or answers that it is
// not ready yet ([driver.Transient]: LOADING, BUSY, MASTERDOWN, TRYAGAIN,
// CLUSTERDOWN), leaves a node that connects on first use; any other error
// reply fails Open, and so does a URL with a password for the default user
// of a server that has none (Redis answers its AUTH "called without any
// password configured"): that URL names the wrong server, or one that lost
// its password.
//
// # Replies
//
// rueidis speaks RESP3 to Redis 6 and later, where a Lua true or false comes
// back as a RESP3 boolean rather than the RESP2 integer 1 and nil. The node
// maps every reply to what RESP2 would have sent, so the core sees the same
// values from every backend. Error replies keep the "ERR " prefix that
// rueidis' own error type drops.
//
// # Contexts
//
// Every call returns when its context is done, with an error that wraps
// ctx.Err(). rueidis needs help for that in two places, which the node
// gives: it sends a lone call with the deadline as a socket deadline, blind
// to an earlier cancellation (clients from URLs always pipeline; for a
// wrapped client the node hides the deadline from rueidis), and it dials a
// broken connection again inside the next call, bounded by the dial timeout
// only (a node that has not answered lately runs calls on a goroutine of its
// own, which the caller waits for only as long as its context allows). A
// node opened from a URL makes a dial that outlasts the call that started
// it to its end, within the node's life and the dial timeout, so that the
// connection serves the next calls: a server whose handshake takes longer
// than the callers' deadlines still answers them once connected.
//
// # Client version
//
// The module requires rueidis v1.0.79 and so declares go 1.25, as that
// release does; the core keeps go 1.22. Older releases have every option
// the node sets (ForceSingleClient since v1.0.10), but with v1.0.10 a
// Sentinel client stayed on a failed master for good in 4 of 29 runs of
// TestSentinelFailover (2 of 5 with a core busy), and in none of 28 with
// v1.0.79, all with a core busy. Among the faults fixed since: closing the
// connection to a master that stopped answering waited for its reply
// forever, holding the client's lock and the goroutine that reads
// Sentinel's events (v1.0.77 bounds the wait to a second), and a failed
// switch closed the connection still in use. A program that requires an
// older rueidis gets v1.0.79 through this module.
package rueidis
