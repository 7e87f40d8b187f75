package goredis

import (
	"context"

	"github.com/dlmgo/redlock/dlm/driver"
)

// A panic inside go-redis (a hook, a bug, an unsupported use) must fail the
// call on this node, never take the program down: every call into the client
// runs under safe, and the subscription's reader recovers as well.

// safe returns call with a panic in it turned into a [driver.PanicError].
func (n *node) safe(call func(context.Context) (any, error)) func(context.Context) (any, error) {
	return func(ctx context.Context) (v any, err error) {
		defer func() {
			if r := recover(); r != nil {
				v, err = nil, driver.Recover(Name, r, n.password)
			}
		}()
		return call(ctx)
	}
}
