package adapterkit

import (
	"context"
	"errors"

	"github.com/dlmgo/redlock/dlm/driver"
)

// ErrorReply returns the text of err when it is an error reply of the
// server, of the client library's type E (found with errors.As), for
// [driver.CheckOpen].
func ErrorReply[E error](err error) (string, bool) {
	var reply E
	if errors.As(err, &reply) {
		return reply.Error(), true
	}
	return "", false
}

// IsReply reports whether err is an error reply of the server, of the
// client library's type E. (In a function of its own, the target of
// errors.As is allocated only when there is an error to examine.)
func IsReply[E error](err error) bool {
	var reply E
	return errors.As(err, &reply)
}

// Fail makes err, from a call within ctx, fit for the caller: a failure to
// get a reply as ctx ended wraps ctx.Err(), and password never shows. Error
// replies (isReply) pass as they are, their message starting with the Redis
// error code.
func Fail(ctx context.Context, err error, password string, isReply func(error) bool) error {
	if err == nil || isReply(err) {
		return err
	}
	return driver.RedactError(driver.ContextError(ctx, err), password)
}
