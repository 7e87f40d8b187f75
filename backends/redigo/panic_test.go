package redigo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// panicConn is a connection whose every request panics, as a buggy
// connection wrapper of the user's might.
type panicConn struct{}

func (panicConn) Close() error                   { return nil }
func (panicConn) Err() error                     { return nil }
func (panicConn) Do(string, ...any) (any, error) { panic("conn panicked") }
func (panicConn) Send(string, ...any) error      { panic("conn panicked") }
func (panicConn) Flush() error                   { panic("conn panicked") }
func (panicConn) Receive() (any, error)          { panic("conn panicked") }
func (panicConn) DoContext(context.Context, string, ...any) (any, error) {
	panic("conn panicked")
}
func (panicConn) ReceiveContext(context.Context) (any, error) { panic("conn panicked") }
func (panicConn) DoWithTimeout(time.Duration, string, ...any) (any, error) {
	panic("conn panicked")
}
func (panicConn) ReceiveWithTimeout(time.Duration) (any, error) { panic("conn panicked") }

type nopHandler struct{}

func (nopHandler) Message(string, string) {}
func (nopHandler) Subscribed(string)      {}

// TestClientPanic checks that a panic inside redigo or the pool's
// connections fails the call with a driver.PanicError, which a manager
// reports as the node's failure, and ends a subscription rather than the
// program.
func TestClientPanic(t *testing.T) {
	t.Parallel()
	pool := &redis.Pool{DialContext: func(context.Context) (redis.Conn, error) { return panicConn{}, nil }}
	n := NewNode(pool, "fake:1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var perr *driver.PanicError
	if _, err := n.Eval(ctx, driver.NewScript("return 1"), nil, nil); !errors.As(err, &perr) || perr.Client != Name {
		t.Errorf("Eval = %v; want a *driver.PanicError from %s", err, Name)
	}
	if err := n.(driver.Pinger).Ping(ctx); !errors.As(err, &perr) {
		t.Errorf("Ping = %v; want a *driver.PanicError", err)
	}
	if _, err := n.(driver.Setter).SetNXGet(ctx, "k", "v", "1000"); !errors.As(err, &perr) {
		t.Errorf("SetNXGet = %v; want a *driver.PanicError", err)
	}

	m, err := dlm.New([]driver.Node{n}, dlm.WithRetry(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.TryLock(ctx, "k")
	var nerr *dlm.NodeError
	if !errors.As(err, &nerr) || !errors.As(err, &perr) {
		t.Errorf("TryLock = %v; want a NodeError wrapping a PanicError", err)
	}

	// The reader panics on its first Receive: the subscription ends.
	sub, err := n.(driver.Subscriber).Subscribe(ctx, nopHandler{})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	select {
	case <-sub.Done():
	case <-ctx.Done():
		t.Fatal("subscription whose reader panicked did not end")
	}
	if err := sub.Subscribe(ctx, "ch"); !errors.As(err, &perr) {
		t.Errorf("Subscription.Subscribe = %v; want a *driver.PanicError", err)
	}
	sub.Close()

	dialPanics := NewNode(&redis.Pool{DialContext: func(context.Context) (redis.Conn, error) { panic("dial panicked") }}, "fake:2")
	if _, err := dialPanics.(driver.Subscriber).Subscribe(ctx, nopHandler{}); !errors.As(err, &perr) {
		t.Errorf("Subscribe = %v; want a *driver.PanicError", err)
	}
}

// closePanicConn is a connection whose Close closes it and then panics, as
// a buggy connection wrapper of the user's might.
type closePanicConn struct {
	fullConn
}

type fullConn interface {
	redis.ConnWithContext
	redis.ConnWithTimeout
}

func (c closePanicConn) Close() error {
	c.fullConn.Close()
	panic("close panicked")
}

// TestClosePanic checks that a panic closing a connection fails the Close
// of a subscription and of a node that owns its pool with a
// driver.PanicError, and that the subscription's reader still ends.
func TestClosePanic(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool := &redis.Pool{MaxIdle: 1, DialContext: func(ctx context.Context) (redis.Conn, error) {
		c, err := redis.DialContext(ctx, "tcp", s.Addr())
		if err != nil {
			return nil, err
		}
		return closePanicConn{c.(fullConn)}, nil
	}}
	n := NewNode(pool, s.Addr()).(*node)
	n.owned = true // its Close closes the pool
	if _, err := n.Eval(ctx, driver.NewScript("return 1"), nil, nil); err != nil {
		t.Fatal(err)
	}
	sub, err := n.Subscribe(ctx, nopHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Subscribe(ctx, "ch"); err != nil {
		t.Fatal(err)
	}
	var perr *driver.PanicError
	if err := sub.Close(); !errors.As(err, &perr) {
		t.Errorf("Subscription.Close = %v; want a *driver.PanicError", err)
	}
	select {
	case <-sub.Done():
	case <-ctx.Done():
		t.Error("the subscription's reader did not end once its connection was closed")
	}
	if err := n.Close(); !errors.As(err, &perr) {
		t.Errorf("Close of a node owning its pool = %v; want a *driver.PanicError", err)
	}
}
