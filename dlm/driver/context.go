package driver

import (
	"context"
	"errors"
	"time"
)

// WithNodeDeadline returns a context that carries parent's values but not
// its cancellation, and that ends at d, or when cancel is called. Package
// dlm passes one to every request it sends to several nodes at once: it
// stops waiting for the requests by itself when its caller's context ends,
// and it calls cancel only after the requests made with the context have
// returned, so that while one of them runs the context can end only at its
// deadline. [DeadlineOnly] reports such a context.
//
// The caller must keep that promise: cancel only once the calls made with
// the context have returned.
func WithNodeDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(context.WithoutCancel(parent), d)
	return deadlineOnly{ctx}, cancel
}

// deadlineOnly marks a context of WithNodeDeadline.
type deadlineOnly struct{ context.Context }

// DeadlineOnly reports whether ctx was made by [WithNodeDeadline]: a
// context that, while a call made with it runs, ends only at its deadline.
//
// An adapter whose client bounds each request by the context's deadline —
// a socket deadline taken from it — meets [Node.Eval]'s contract for such a
// context without watching it for a cancellation: it needs no goroutine or
// callback per request to return early. For any other context that can end
// it must still return as soon as the context is done.
func DeadlineOnly(ctx context.Context) bool {
	_, ok := ctx.(deadlineOnly)
	return ok
}

// ContextError returns the error of a call that failed with err, made to
// wrap ctx.Err() when ctx ended: errors.Is then matches both
// context.Canceled or context.DeadlineExceeded and err, so package dlm tells
// a request cut short by its caller from a node's failure. Clients report a
// request cut short by the context's deadline as a socket timeout ("i/o
// timeout"), which may come a moment before ctx.Err() is set, so a deadline
// that has passed counts as ctx's end too.
//
// While ctx has not ended, and when err already matches ctx's error,
// ContextError returns err itself. An adapter calls it on every error that
// is not an error reply of the server.
func ContextError(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if cerr == nil {
		dl, ok := ctx.Deadline()
		if !ok || time.Now().Before(dl) {
			return err
		}
		cerr = context.DeadlineExceeded
	}
	if errors.Is(err, cerr) {
		return err
	}
	return &contextError{ctx: cerr, err: err}
}

// contextError is the error of a call cut short by its context: errors.Is
// sees both the context's error and the client's.
type contextError struct{ ctx, err error }

func (e *contextError) Error() string   { return e.ctx.Error() + ": " + e.err.Error() }
func (e *contextError) Unwrap() []error { return []error{e.ctx, e.err} }
