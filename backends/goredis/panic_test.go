package goredis

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
)

// panicHook makes go-redis panic when it dials or sends a command.
type panicHook struct{ dial, process bool }

func (h panicHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h.dial {
			panic("dial hook panicked")
		}
		return next(ctx, network, addr)
	}
}

func (h panicHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.process {
			panic("process hook panicked")
		}
		return next(ctx, cmd)
	}
}

func (panicHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestClientPanic checks that a panic inside go-redis fails the call with a
// driver.PanicError, which a manager reports as the node's failure, with
// and without a context that can end, and on the pub/sub path.
func TestClientPanic(t *testing.T) {
	s := dlmtest.StartServer(t)
	newPanicky := func(h panicHook) driver.Node {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		c.AddHook(h)
		t.Cleanup(func() { c.Close() })
		return NewNode(c)
	}
	n := newPanicky(panicHook{process: true})
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"Background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"Timeout", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 5*time.Second)
		}},
	} {
		ctx, cancel := tc.ctx()
		_, err := n.Eval(ctx, driver.NewScript("return 1"), nil, nil)
		cancel()
		var perr *driver.PanicError
		if !errors.As(err, &perr) || perr.Client != Name {
			t.Errorf("%s: Eval = %v; want a *driver.PanicError from %s", tc.name, err, Name)
		}
		if err := n.(driver.Pinger).Ping(context.Background()); !errors.As(err, &perr) {
			t.Errorf("%s: Ping = %v; want a *driver.PanicError", tc.name, err)
		}
	}

	m, err := dlm.New([]driver.Node{n}, dlm.WithRetry(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.TryLock(context.Background(), "k")
	var nerr *dlm.NodeError
	var perr *driver.PanicError
	if !errors.As(err, &nerr) || !errors.As(err, &perr) {
		t.Errorf("TryLock = %v; want a NodeError wrapping a PanicError", err)
	}

	sub := newPanicky(panicHook{dial: true}).(driver.Subscriber)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := sub.Subscribe(ctx, nopHandler{}); !errors.As(err, &perr) {
		t.Errorf("Subscribe = %v; want a *driver.PanicError", err)
	}
}

type nopHandler struct{}

func (nopHandler) Message(string, string) {}
func (nopHandler) Subscribed(string)      {}
