package rueidis

import (
	"context"
	"errors"
	"time"
)

// callContext returns the context to hand the client.
func (n *node) callContext(ctx context.Context) context.Context {
	if n.hideDeadline {
		if _, ok := ctx.Deadline(); ok {
			return noDeadline{ctx}
		}
	}
	return ctx
}

// noDeadline is a context whose deadline is hidden but which is done when
// its parent is. Given one, rueidis queues the request for its pipeline and
// waits on Done instead of sending it with a socket deadline on the caller's
// goroutine, a path where a cancellation before the deadline goes unseen.
type noDeadline struct{ context.Context }

func (noDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

// ctxError makes an error that happened while ctx was ending wrap ctx.Err().
// A socket deadline taken from ctx can fire a moment before ctx.Err() is
// set, so a passed deadline counts as well. A timeout of the client's own
// (a handshake bounded by the dial timeout, a write by the write timeout)
// comes back from rueidis as context.DeadlineExceeded too; while ctx is not
// done it must not pass for the caller's.
func ctxError(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if cerr == nil {
		dl, ok := ctx.Deadline()
		if !ok || time.Now().Before(dl) {
			return clientTimeout(err)
		}
		cerr = context.DeadlineExceeded
	}
	if errors.Is(err, cerr) {
		return err
	}
	return &ctxErr{ctx: cerr, err: clientTimeout(err)}
}

// ctxErr is the error of a call cut short by its context: errors.Is sees
// both the context's error and the client's.
type ctxErr struct{ ctx, err error }

func (e *ctxErr) Error() string   { return e.ctx.Error() + ": " + e.err.Error() }
func (e *ctxErr) Unwrap() []error { return []error{e.ctx, e.err} }

// clientTimeout hides the context.DeadlineExceeded that rueidis reports for
// a timeout of its own.
func clientTimeout(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return errClientTimeout
}

// errClientTimeout is a timeout of the client's own: no answer within the
// dial timeout (connecting) or the write timeout.
var errClientTimeout = errors.New("rueidis: no answer within the client's dial or write timeout")
