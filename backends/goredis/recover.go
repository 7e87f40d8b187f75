package goredis

import (
	"context"

	"github.com/dlmgo/redlock/internal/adapterkit"
)

// A panic inside go-redis (a hook, a bug, an unsupported use) must fail the
// call on this node, never take the program down: every call into the client
// runs under safe, every Close under closeSafe, and the subscription's
// reader receives and calls the handler under [adapterkit.Panics.Read].
//
// A panic inside a PubSub's Receive may leave the PubSub's lock held (go-redis
// does not release it on the way out), so that its Close would block for
// ever: a reader whose Receive panicked ends without closing its PubSub.

// panics recovers the node's panics, redacting its password.
func (n *node) panics() adapterkit.Panics {
	return adapterkit.Panics{Client: Name, Password: n.password}
}

// safe returns call with a panic in it turned into a [driver.PanicError].
func (n *node) safe(call func(context.Context) (any, error)) func(context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		return n.panics().Call(func() (any, error) { return call(ctx) })
	}
}

// closeSafe calls close, with a panic in it turned into a
// [driver.PanicError].
func (n *node) closeSafe(close func() error) error { return n.panics().Close(close) }
