package adapterkit

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// ErrClientTimeout is matched by the error of a [Pipelined] node's call
// that its client gave up on by a timeout of its own, the dial timeout
// (connecting) or the write timeout, while the caller's context had not
// ended.
var ErrClientTimeout = errors.New("no answer within the client's dial or write timeout")

// ctxError makes an error that happened while ctx was ending wrap
// ctx.Err(), as [driver.ContextError] does. A timeout of the client's own (a
// handshake bounded by the dial timeout, a write by the write timeout) comes
// back from rueidis as context.DeadlineExceeded too; while ctx is not done
// it must not pass for the caller's, and becomes clientTimeout, which
// matches [ErrClientTimeout].
//
// A socket timeout (an i/o timeout) is one of these too: the client sets
// the socket's deadline from ctx's or from its own timeouts, and the
// socket's may fire a moment before ctx's deadline by the clock read here.
func ctxError(ctx context.Context, err, clientTimeout error) error {
	var ne net.Error
	if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
		return driver.ContextError(ctx, err)
	}
	switch e := driver.ContextError(ctx, clientTimeout); {
	case e == clientTimeout:
		return e // ctx has not ended: the timeout is the client's
	case errors.Is(e, context.DeadlineExceeded):
		return driver.ContextError(ctx, err) // err, matching DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return err // err already matches the error ctx ended with
	default:
		return e // cancelled during a timeout of the client's
	}
}

// noDeadline is a context whose deadline is hidden but which is done when
// its parent is. Given one, rueidis queues the request for its pipeline and
// waits on Done instead of sending it with a socket deadline on the caller's
// goroutine, a path where a cancellation before the deadline goes unseen.
type noDeadline struct{ context.Context }

func (noDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }
