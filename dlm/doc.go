// Package dlm is a distributed lock manager on Redis, implementing the
// Redlock algorithm over N independent Redis masters.
//
// A [Manager] holds the nodes. [Manager.Lock] and [Manager.TryLock] take a
// lock named by a key: a fresh 128-bit random secret is written with the key's
// TTL to every node at once, and the lock is held when a majority (N/2+1)
// granted it within the validity time
//
//	validity = TTL - elapsed - (TTL × drift factor + 2 ms)
//
// measured on the local monotonic clock, with the TTL in whole milliseconds
// as Redis applies it. [Lock.Until] is the end of that
// validity: the holder may act on the protected resource only before it.
// Otherwise the attempt is released on every node — also those that failed or
// did not answer, since their write may have landed — and Lock retries after
// a jittered delay. [Lock.Unlock] deletes the key only where it still holds
// the secret; [Lock.Extend] resets the TTL only where it does, and counts only
// with a quorum. With one node, the Manager is the plain single-instance lock.
//
// The package is to Redis clients what database/sql is to databases: it owns
// the algorithm and every Lua script, and talks to nodes through the small
// interfaces of package [github.com/dlmgo/redlock/dlm/driver]. Backends for
// redigo, go-redis, rueidis and valkey-go register themselves when imported:
//
//	import _ "github.com/dlmgo/redlock/backends/goredis"
//
//	m, err := dlm.Open([]string{"redis+goredis://10.0.0.1:6379", ...})
//
// A URL's scheme names its backend, redis+NAME:// or rediss+NAME:// (TLS).
// A plain redis:// or rediss:// URL names none: it uses the only registered
// backend, and is refused with [ErrUnknownDriver], naming them, when
// several are registered, never given one of them; the redlock command,
// which includes three, follows the same rule (its --backend names the
// backend of such URLs). A URL without a host is bad input
// ([driver.ErrBadURL], matching [ErrInvalid]), not localhost.
//
// # Read-write locks and semaphores
//
// [Manager.RLock], [Manager.TryRLock] and [Manager.RDo] take read locks,
// which readers hold together; the write lock is the mutex on the same key.
// A [Semaphore] ([Manager.Semaphore]) lets at most its limit of holders in.
// Each reader and each permit is a lease with a secret and a TTL of its own,
// so a crashed holder frees its share when its TTL ends; the returned [Lock]
// is extended, released and lost as the mutex is. A permit needs
// [SemaphoreQuorum] nodes, more than a majority once the limit is above 1
// (docs/design.md has the proof).
//
// # Errors
//
// Errors are checked with errors.Is against the sentinels: [ErrNotObtained]
// (another holder has the lock), [ErrUnavailable] (too many nodes failed for a
// quorum), [ErrLockLost] (an Extend or Unlock found the lock gone or
// expired), [ErrNotHeld] (Unlock or Extend of a lock already unlocked, or
// of the nil *Lock a failed Lock returns, so a deferred Unlock written
// before the error check never panics), [ErrInvalid] (bad input, such as a
// node timeout not below the TTL; no round trip made), [ErrClosed]. A
// cancelled wait wraps the context's error instead. Failed attempts are a
// [*QuorumError] carrying the vote, and each node's failure is a [*NodeError]
// naming the node, never its password; secrets never appear in errors or logs.
//
// # Safety
//
// Redlock is safe while a majority of nodes keeps its keys: a node that
// crashes must stay down for the largest TTL in use before it rejoins empty,
// or persist every write (appendfsync always). Validity is computed on the
// client's monotonic clock; the nodes' clocks must not jump. A holder that
// pauses past [Lock.Until] (GC, SIGSTOP, a VM migration) can still act after
// another client obtained the lock: protect writes with a check that fails
// for a stale holder.
//
// # Leader election
//
// [Manager.Election] returns an [Election], as etcd's: [Election.Campaign]
// waits until the caller leads it and returns a [Leadership], a lock taken
// with fencing and kept by auto-extension until [Leadership.Resign], its
// loss or [Manager.Close] — not the context given to Campaign — with the
// leader's value stored as data beside it. [Election.Leader] reads who
// leads, and [Election.Observe] streams it, heard from the nodes'
// announcements and read when the leader's keys expire.
//
// # Tests without Redis
//
// Code that takes locks can depend on the [Locker] interface, which Manager
// implements. Package [github.com/dlmgo/redlock/dlm/memlock] returns a
// Manager over an in-memory node that runs this package's scripts in Go:
// the same semantics and errors without Redis.
package dlm
