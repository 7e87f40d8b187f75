// Package goredis makes a [github.com/redis/go-redis/v9] client serve as a
// node of a [github.com/dlmgo/redlock/dlm.Manager].
//
// A blank import registers the driver under [Name], for "redis+goredis://"
// and "rediss+goredis://" URLs, and for plain "redis://" URLs when it is the
// only driver linked in:
//
//	import _ "github.com/dlmgo/redlock/backends/goredis"
//
//	m, err := dlm.Open([]string{
//		"redis+goredis://:secret@10.0.0.1:6379/0?dial_timeout=100ms",
//		"redis+goredis://:secret@10.0.0.2:6379/0?dial_timeout=100ms",
//		"redis+goredis://:secret@10.0.0.3:6379/0?dial_timeout=100ms",
//	})
//
// A URL with cluster=true (and more seed addresses in addr parameters) opens
// a [redis.ClusterClient], making the node a whole Redis Cluster; one with
// sentinel_master=NAME opens a failover client through the Sentinels at its
// addresses (docs/operations.md says what each topology is safe for).
//
// A client the program already has is wrapped with [NewNode], which does not
// take ownership of it:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379"})
//	defer rdb.Close()
//	m, err := dlm.New([]driver.Node{goredis.NewNode(rdb), ...})
//
// A [redis.ClusterClient] makes the node a whole Redis Cluster, which
// tells the manager so ([driver.Sharded]): locks over keys of several hash
// slots are refused up front. A client type NewNode does not recognise,
// such as the program's own wrapper around a ClusterClient, is taken for
// one server; a cluster behind it refuses such locks itself (CROSSSLOT),
// which the manager reports as [dlm.ErrInvalid] without retrying. A
// [redis.Ring] is refused: it moves keys between its shards when it marks
// one down, so the same node could grant a lock twice. Make each of its
// shards a node of its own instead.
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
// # Logging
//
// go-redis logs lines of its own, such as "sentinel: new master=..." after
// a Sentinel failover, to standard error by default, through one logger
// for the whole process: they cannot follow a manager's [dlm.WithLogger].
// [SetLogger] sends them to a [slog.Logger], typically the same one.
//
// # Client version
//
// The module requires go-redis v9.0.0, the first v9 release, which already
// has everything the adapter uses: [redis.Options.ContextTimeoutEnabled],
// which makes a request's socket deadline the context's, and the Dialer
// option, through which the adapter makes TLS handshakes honour the context.
// Requiring no more than that leaves the choice of a newer go-redis, and of
// the Go release it demands, to the program.
//
// # Contexts
//
// go-redis takes a request's deadline from its context but does not notice a
// context cancelled before that deadline. A node therefore waits for a call
// on the context, on a goroutine of its own: Eval and Ping return as soon as
// the context is done. Close waits for those goroutines when the node owns
// the client.
//
// The requests package dlm sends need none: their context, of
// [driver.WithNodeDeadline], ends only at its deadline while they run (the
// manager stops waiting by itself when its caller's context ends), so when
// the client takes its socket deadlines from contexts — always for a node
// opened from a URL, and for a client of the user's with
// ContextTimeoutEnabled — the call runs on the caller's goroutine, bounded
// by the socket deadline.
//
// Until one times out: go-redis closes a connection whose read timed out,
// so a node whose server answered after its callers' deadlines would dial
// and send HELLO for nearly every request, thousands of connections a
// second from one busy process. Once a request of the node has run past its
// deadline, for the next 10 seconds ([adapterkit.SlowWindow]) its requests
// wait on goroutines of their own, which the callers stop waiting for at
// their deadlines, and read the late reply, up to the client's read timeout
// past the deadline, before the connection goes back to the pool. A node
// then has at most the pool's size of connections open to its server at
// once (pool_size; go-redis' default, 10 per GOMAXPROCS), however slow the
// server; a request that finds them all busy, or finds none idle while
// another request is late, waits for one within its context. (The goroutine costs about a fifth of an uncontended lock's
// rate, which a node that answers in time does not pay.)
//
// The requests of package dlm that come while another is under way are sent
// together, in one pipeline on one connection, once it returns: one write
// and one read for many requests, on the client and on the server, where
// each would take its own. A request alone is sent at once; nothing waits
// for a batch to fill. A batch waits for a connection until the earliest
// deadline of its requests.
package goredis
