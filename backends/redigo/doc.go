// Package redigo makes a [github.com/gomodule/redigo/redis] connection pool
// serve as a node of a [github.com/dlmgo/redlock/dlm.Manager].
//
// A redigo node is one server address: a master of its own, or an endpoint
// that follows failovers. redigo has no Redis Cluster or Sentinel client, so
// [Driver.Open] refuses URLs with cluster= or sentinel_master= with
// [ErrUnsupported]; open those nodes with the goredis or rueidis backend.
//
// A blank import registers the driver under [Name], for "redis+redigo://"
// and "rediss+redigo://" URLs, and for plain "redis://" URLs when it is the
// only driver linked in:
//
//	import _ "github.com/dlmgo/redlock/backends/redigo"
//
//	m, err := dlm.Open([]string{
//		"redis+redigo://:secret@10.0.0.1:6379/0?pool_size=16",
//		"redis+redigo://:secret@10.0.0.2:6379/0?pool_size=16",
//		"redis+redigo://:secret@10.0.0.3:6379/0?pool_size=16",
//	})
//
// A pool the program already has is wrapped with [NewNode], which does not
// take ownership of it:
//
//	pool := &redis.Pool{DialContext: ..., MaxIdle: 16}
//	defer pool.Close()
//	m, err := dlm.New([]driver.Node{redigo.NewNode(pool, "10.0.0.1:6379"), ...})
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
// # Client version
//
// The module requires redigo v1.8.6, the first release with a context on
// every step of a request: [redis.Pool.GetContext] and [redis.DoContext],
// which returns as soon as the context is done and closes the connection,
// so that a reply that comes late is never read by the next request.
// Requiring no more than that leaves the choice of a newer redigo to the
// program.
//
// # Connections
//
// A node opened from a URL dials its connections itself, so that the TLS
// handshake, AUTH and SELECT are bounded by the context and the dial
// timeout, and checks an idle connection with a non-blocking read before
// reusing it, so that the connections pooled before a server restart do not
// each fail a call after it (the check reads the socket once and allocates
// nothing).
//
// Such a connection also reads each reply on the goroutine that sent the
// request, where redigo's DoContext would start one per request, bounded by
// its read timeout.
//
// A call of package dlm ([driver.WithNodeDeadline]) runs on the caller's
// goroutine while no request of the node has run past its deadline for 10
// seconds ([adapterkit.SlowWindow]); the read deadline, the context's,
// bounds it, and a connection whose request timed out is dropped. Any other
// call, and every call of a node that is slow, runs its request on a
// goroutine of the node's own, which the caller stops waiting for when its
// context ends, but which waits on for the reply, up to the read timeout past the context's deadline, before it gives
// the connection back to the pool: redigo drops a connection whose read
// failed, so a node whose server answered after its callers' deadlines would
// otherwise dial and authenticate for nearly every request; while a
// request is late, the next that finds no idle connection waits for it
// rather than dialing. A node has at most the pool's MaxActive connections
// open at once (pool_size, by
// default 10 per GOMAXPROCS), however slow its server; a request that finds
// them all busy waits for one within its context. Close closes the
// connections that such requests still hold. With a pool of the user's, the
// same holds for its connections, the late reply awaited up to 3s
// ([driver.DefaultReadTimeout]) past the deadline.
package redigo
