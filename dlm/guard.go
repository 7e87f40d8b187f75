package dlm

import (
	"errors"
	"fmt"
	"time"
)

// ErrNodeRestarted is a node's failure under [WithRestartGuard] when the node
// lost its data less than the guard window ago: it is not counted toward a
// quorum yet. Find it with errors.Is inside a [*NodeError].
var ErrNodeRestarted = errors.New("dlm: node restarted empty within the restart guard window; not counted yet")

// WithRestartGuard makes the library enforce Redlock's delayed-restart rule
// instead of trusting operators with it: a node that lost its data (it
// restarted without persistence, or is new) does not count toward a quorum
// until it has been up for window, which must be at least the largest TTL
// any client uses for these keys. A node that restarts with its data intact
// (AOF) is counted at once, since it forgot nothing.
//
// Each node keeps, per lock key, a key that holds the moment, by the node's
// own clock, from which it may be counted; when that key is missing, the
// acquire script computes the moment from the node's uptime (INFO server).
// A node is never counted before it has been up for window. INFO gives the
// uptime in whole seconds, from times cut to the second, so a node started
// a millisecond ago may report one second: the script takes the latest
// start the figure allows, and a node that lost its data is counted between
// window and window rounded up to the second plus one second after it
// started.
// The key expires a window after the lock key's last acquire (after that
// moment), so keys no longer used leave nothing behind; a node restarted
// with its data then waits out the window for them, as an empty one does. The guarded scripts therefore also need the INFO
// and TIME commands under ACLs. A node refused this way fails the attempt
// with [ErrNodeRestarted]. Nodes that are new when the guard is first used
// wait out the window too.
//
// The guard sees a node that lost all its data, not one that lost part of
// it: a node restarted from an older RDB snapshot, or from an AOF written
// with appendfsync everysec that lost its last second, still has its guard
// key and is counted at once, though it may have forgotten recent locks.
// Such nodes need the delayed restart, or appendfsync always.
func WithRestartGuard(window time.Duration) Option {
	return optionFunc(func(c *config) { c.restartGuard = window })
}

func (c *config) validateGuard() error {
	switch {
	case c.restartGuard < 0:
		return fmt.Errorf("%w: restart guard window %v: want a positive duration, or 0 for none", ErrInvalid, c.restartGuard)
	case c.restartGuard > 0 && c.restartGuard < c.ttl:
		return fmt.Errorf("%w: restart guard window %v is shorter than the TTL %v; it must cover the largest TTL in use", ErrInvalid, c.restartGuard, c.ttl)
	}
	return nil
}
