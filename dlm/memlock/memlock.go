// Package memlock is package dlm without Redis, for unit tests: [New]
// returns a [dlm.Manager] — a [dlm.Locker] — over an in-memory [Node] that
// runs dlm's own scripts in Go. Since the manager is dlm's, with the same
// algorithm over a node that answers as Redis would, code under test sees
// the same semantics and the same errors as in production: [dlm.ErrNotObtained]
// when another holder has a lock, [dlm.ErrLockLost] after expiry,
// [dlm.ErrNotHeld] on a second Unlock, [dlm.ErrInvalid] for bad input; TTLs, [dlm.Lock.Until],
// [dlm.Lock.Lost], auto-extension, fencing, Do, read-write locks (writers
// preferred), semaphores and elections all behave as they do on Redis.
//
// Keys expire by the local clock, which inside a testing/synctest bubble is
// the bubble's fake clock: a test can let a TTL run out in no time. The same
// clock stands for the node's: under [dlm.WithFenceExpiry] fencing counters
// expire, and a counter lost to [Node.FlushAll] or expired starts again from
// the clock in microseconds, as on Redis, so tokens keep growing. Waiters
// wait in the node's lines of waiters, as on Redis: a release hands a key to
// the head of its line and names that waiter on its manager's channel, and
// [dlm.WithFairness] keeps the order of the lines.
//
// What it does not model: network latency, and node restarts other than
// [Node.FlushAll]: under [dlm.WithRestartGuard] the node keeps its guard
// keys as Redis does, but counts as up since long before any window, so
// the guard never holds it back. Use dlmtest's real-Redis harness to test
// those.
package memlock

import (
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// New returns a manager over one fresh in-memory node (the single-instance
// lock), with opts as its defaults. Managers from separate calls share
// nothing; to have several managers contend, as several processes would,
// give each a dlm.New over the same [Node]s.
func New(opts ...dlm.ManagerOption) (*dlm.Manager, error) {
	return dlm.New([]driver.Node{NewNode("memlock:0")}, opts...)
}
