package goredis

import (
	"context"
	"errors"
	"time"
)

// ctxError makes an error that happened while ctx was ending wrap ctx.Err():
// go-redis reports a request cut short by the context's deadline as a
// socket timeout ("i/o timeout"), which may even come a moment before
// ctx.Err() is set, so a passed deadline counts as well.
func ctxError(ctx context.Context, err error) error {
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
	return &ctxErr{ctx: cerr, err: err}
}

// ctxErr is the error of a call cut short by its context: errors.Is sees
// both the context's error and the client's.
type ctxErr struct{ ctx, err error }

func (e *ctxErr) Error() string   { return e.ctx.Error() + ": " + e.err.Error() }
func (e *ctxErr) Unwrap() []error { return []error{e.ctx, e.err} }
