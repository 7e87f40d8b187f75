package rueidis

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
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

// ctxError makes an error that happened while ctx was ending wrap ctx.Err(),
// as [driver.ContextError] does. A timeout of the client's own (a handshake
// bounded by the dial timeout, a write by the write timeout) comes back from
// rueidis as context.DeadlineExceeded too; while ctx is not done it must not
// pass for the caller's, and becomes errClientTimeout.
//
// A socket timeout (an i/o timeout) is one of these too: rueidis sets the
// socket's deadline from ctx's or from its own timeouts, and the socket's
// may fire a moment before ctx's deadline by the clock read here.
func ctxError(ctx context.Context, err error) error {
	var ne net.Error
	if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
		return driver.ContextError(ctx, err)
	}
	switch e := driver.ContextError(ctx, errClientTimeout); {
	case e == errClientTimeout:
		return e // ctx has not ended: the timeout is the client's
	case errors.Is(e, context.DeadlineExceeded):
		return driver.ContextError(ctx, err) // err, matching DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return err // err already matches the error ctx ended with
	default:
		return e // cancelled during a timeout of the client's
	}
}

// errClientTimeout is a timeout of the client's own: no answer within the
// dial timeout (connecting) or the write timeout.
var errClientTimeout = errors.New("rueidis: no answer within the client's dial or write timeout")
