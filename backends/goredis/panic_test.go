package goredis

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
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
	t.Parallel()
	s := redistest.StartServer(t)
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
		ctx, cancel = tc.ctx()
		_, err = n.(driver.Setter).SetNXGet(ctx, "k", "v", "1000")
		cancel()
		if !errors.As(err, &perr) {
			t.Errorf("%s: SetNXGet = %v; want a *driver.PanicError", tc.name, err)
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

// closePanicConn is a connection whose Close closes the socket and then
// panics, as a buggy connection wrapper of the user's might.
type closePanicConn struct{ net.Conn }

func (c closePanicConn) Close() error {
	c.Conn.Close()
	panic("close panicked")
}

func closePanicDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return closePanicConn{c}, nil
}

// TestClosePanic checks that a panic closing go-redis' connections fails
// the Close of a subscription and of a node that owns its client with a
// driver.PanicError, and that the subscription's reader still ends.
func TestClosePanic(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n := newNode(redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, Dialer: closePanicDialer}), s.Addr(), true)
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
		t.Errorf("Close of a node owning its client = %v; want a *driver.PanicError", err)
	}
}

// blockedOnMutex reports whether a goroutine whose stack mentions frame
// waits to lock a sync.Mutex.
func blockedOnMutex(frame string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[sync.Mutex.Lock") && strings.Contains(g, frame) {
			return true
		}
	}
	return false
}

// panicOnceHandler panics in its Message for channel, once another
// connection's reader waits to hand the handler a message of its own.
type panicOnceHandler struct {
	t        *testing.T
	channel  string
	entered  chan struct{}
	panicked atomic.Bool
}

func (h *panicOnceHandler) Subscribed(string) {}

func (h *panicOnceHandler) Message(channel, _ string) {
	if channel != h.channel || h.panicked.Swap(true) {
		return
	}
	close(h.entered)
	for deadline := time.Now().Add(5 * time.Second); !blockedOnMutex("shardedSubscription"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Error("no other reader waited for the handler within 5s: the test proves nothing")
			break
		}
	}
	panic("handler panicked")
}

// TestShardedHandlerPanic checks that a panic in the handler of a sharded
// subscription, while another master's reader waits to call it, ends the
// subscription without leaving that reader blocked: Close returns.
func TestShardedHandlerPanic(t *testing.T) {
	rc := redistest.StartRedisCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), MaxRetries: -1})
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Two channels whose slots two different masters serve.
	master := func(ch string) string {
		m, err := cc.MasterForKey(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	a, b := "ch-a", ""
	for i := 0; b == ""; i++ {
		if ch := "ch-b" + strconv.Itoa(i); master(ch) != master(a) {
			b = ch
		}
	}
	h := &panicOnceHandler{t: t, channel: a, entered: make(chan struct{})}
	sub, err := NewNode(cc).(driver.Subscriber).Subscribe(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Subscribe(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	if err := cc.SPublish(ctx, a, "x").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.entered:
	case <-ctx.Done():
		t.Fatal("the handler was not called for the first message")
	}
	if err := cc.SPublish(ctx, b, "y").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.Done():
	case <-ctx.Done():
		t.Fatal("the subscription did not end after its handler panicked")
	}
	closed := make(chan error, 1)
	go func() { closed <- sub.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5s: a reader is blocked on the handler's lock")
	}
}
