package adapterkit

import (
	"context"
	"time"
)

// A rueidis client that finds a connection broken makes a new one inside
// the next call, and in the releases the backends support that dial and
// handshake are bounded by the dial timeout, not by the call's context:
// against a server that accepts connections but does not answer (paused,
// overloaded, behind a black hole) one call can take twice the dial timeout,
// whatever its deadline. A Pipelined node therefore calls the client
// directly only while the server is known to answer, and otherwise on a
// goroutine of its own that the caller waits for only as long as its
// context allows ([Gate.Go]).
//
// "Known to answer" means that a reply came within the last healthyWindow,
// no call failed since but by its context, and, for a client the node made,
// no connection closed since and no call's dial is under way. The client
// drops a connection that stays open only after ConnWriteTimeout without a
// reply to its PING, so while the window is shorter than that no reconnect
// can be due on the direct path; a connection that breaks (reset, closed)
// makes the node's calls guarded, which dial it again (dialshield.go). A
// call of a client the node made never dials on its caller's goroutine: one
// that would (a connection the client has not needed yet) goes on as
// guarded (conns.dial). A node in use stays on the direct path, which costs
// a clock read; an idle or failing one pays a goroutine per call until a
// reply comes.
//
// Calls on the guarded path may reach the server in another order than they
// were made, as calls on different connections of a pool may: a call whose
// context ended can still be sent after the caller has moved on.

// healthy reports whether a reply came within the window and no call's
// dial is under way: a call that needs the connection being dialed waits
// for the dial whatever its context.
func (n *Pipelined[C, D]) healthy() bool {
	last := n.lastReply.Load()
	return last != 0 && n.since()-last < int64(n.healthyWindow) && n.dials.Load() == 0
}

// sawReply records that the server answered.
func (n *Pipelined[C, D]) sawReply() {
	now := n.since()
	// Skip most stores on a busy node: the window is coarse.
	if last := n.lastReply.Load(); last == 0 || now-last > int64(n.healthyWindow/8) {
		n.lastReply.Store(now)
	}
}

// sawFailure records that a call failed without a reply, unless its context
// ended: a server that is slow to answer a short deadline is not broken, and
// one that went silent is caught by the window.
func (n *Pipelined[C, D]) sawFailure(ctx context.Context) {
	if ctx.Err() == nil {
		n.lastReply.Store(0)
	}
}

// since returns the monotonic time since the node was made, never 0.
func (n *Pipelined[C, D]) since() int64 { return int64(time.Since(n.born)) + 1 }

// guarded runs call on a goroutine of its own and waits for it or for ctx.
// Close waits for the goroutine, which ends when the client returns. call
// hands the client lctx: for a client the node made, a [dialShield], so
// that a dial the call starts is made to its end.
func (n *Pipelined[C, D]) guarded(ctx context.Context, call func(ctx, lctx context.Context) (any, error)) (any, error) {
	return n.gate.Go(ctx, n.errs.closed, func(ctx context.Context) (any, error) {
		if n.conns == nil || ctx.Done() == nil {
			return call(ctx, n.callContext(ctx))
		}
		s := newDialShield(ctx, n.conns.life, &n.dials)
		defer s.release()
		v, err := call(ctx, s)
		if err != nil && n.conns.life.Err() != nil {
			return nil, n.errs.closed // cut short by Close
		}
		return v, err
	})
}
