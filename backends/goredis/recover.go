package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
)

// A panic inside go-redis (a hook, a bug, an unsupported use) must fail the
// call on this node, never take the program down: every call into the client
// runs under safe, every Close under closeSafe, and the subscription's
// reader receives under receive and calls the handler under handle.
//
// A panic inside a PubSub's Receive may leave the PubSub's lock held (go-redis
// does not release it on the way out), so that its Close would block for
// ever: a reader whose Receive panicked ends without closing its PubSub.

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

// closeSafe calls close, with a panic in it turned into a
// [driver.PanicError].
func (n *node) closeSafe(close func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = driver.Recover(Name, r, n.password)
		}
	}()
	return close()
}

// receive is ps.Receive, with a panic in it turned into a
// [driver.PanicError].
func (n *node) receive(ps *redis.PubSub) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, driver.Recover(Name, r, n.password)
		}
	}()
	return ps.Receive(context.Background())
}

// handle calls a subscription's handler, with a panic in it turned into a
// [driver.PanicError].
func (n *node) handle(call func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = driver.Recover(Name, r, n.password)
		}
	}()
	call()
	return nil
}

// isPanic reports whether err is a [driver.PanicError].
func isPanic(err error) bool {
	var perr *driver.PanicError
	return errors.As(err, &perr)
}
