package rueidis

import (
	"context"
	"time"
)

// A rueidis client that finds a connection broken makes a new one inside
// the next call, and in the releases this module supports that dial and
// handshake are bounded by the dial timeout, not by the call's context:
// against a server that accepts connections but does not answer (paused,
// overloaded, behind a black hole) one call can take twice the dial timeout,
// whatever its deadline. The node therefore calls the client directly only
// while the server is known to answer, and otherwise on a goroutine of its
// own that the caller waits for only as long as its context allows.
//
// "Known to answer" means that a reply came within the last healthyWindow and
// no call failed since but by its context. rueidis drops a connection that stays open only after
// ConnWriteTimeout without a reply to its PING, so while the window is
// shorter than that no reconnect can be due on the direct path; a connection
// that breaks (reset, closed) is dialed again at once, and fails or succeeds
// fast, unless the server went silent, which the window covers. A node in use
// stays on the direct path, which costs a clock read; an idle or failing one
// pays a goroutine per call until a reply comes.
//
// Calls on the guarded path may reach the server in another order than they
// were made, as calls on different connections of a pool may: a call whose
// context ended can still be sent after the caller has moved on.

// defaultHealthyWindow is healthyWindow for clients the user built. rueidis
// defaults their ConnWriteTimeout to 10s; a client set far lower than the
// window can hold a call after going silent for up to twice its dial timeout.
const defaultHealthyWindow = 500 * time.Millisecond

// healthy reports whether a reply came within the window.
func (n *node) healthy() bool {
	last := n.lastReply.Load()
	return last != 0 && n.since()-last < int64(n.healthyWindow)
}

// sawReply records that the server answered.
func (n *node) sawReply() {
	now := n.since()
	// Skip most stores on a busy node: the window is coarse.
	if last := n.lastReply.Load(); last == 0 || now-last > int64(n.healthyWindow/8) {
		n.lastReply.Store(now)
	}
}

// sawFailure records that a call failed without a reply, unless its context
// ended: a server that is slow to answer a short deadline is not broken, and
// one that went silent is caught by the window.
func (n *node) sawFailure(ctx context.Context) {
	if ctx.Err() == nil {
		n.lastReply.Store(0)
	}
}

// since returns the monotonic time since the node was made, never 0.
func (n *node) since() int64 { return int64(time.Since(n.born)) + 1 }

type result struct {
	v   any
	err error
}

// guarded runs call on a goroutine of its own and waits for it or for ctx.
// Close waits for the goroutine, which ends when the client returns.
func (n *node) guarded(ctx context.Context, call func() (any, error)) (any, error) {
	if !n.spawning() {
		return nil, errClosed
	}
	done := make(chan result, 1)
	go func() {
		defer n.wg.Done()
		v, err := call()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// spawning counts a goroutine about to start in wg, unless the node is
// closed. Under calls' read lock, the count happens before Close waits.
func (n *node) spawning() bool {
	n.calls.RLock()
	defer n.calls.RUnlock()
	if n.closed.Load() {
		return false
	}
	n.wg.Add(1)
	return true
}
