package redigo

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestInlineRequests checks that a node from a URL runs each request on the
// caller's goroutine, where redigo's DoContext would start one: under a
// context of driver.WithNodeDeadline bounded by the read deadline, and under
// a cancellable one cut short by closing the connection. Either way the call
// returns when its context ends, and the late reply is never read.
func TestInlineRequests(t *testing.T) {
	s := redistest.StartServer(t)
	n := openNode(t, "redis+redigo://"+s.Addr()+"?read_timeout=10s&write_timeout=10s&pool_size=1")
	if v, err := eval(n, echo, nil, []string{"warm"}); v != "warm" || err != nil {
		t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
	}
	const end = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"node deadline", func() (context.Context, context.CancelFunc) {
			return driver.WithNodeDeadline(context.Background(), time.Now().Add(end))
		}, context.DeadlineExceeded},
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(end, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Pause()
			ctx, cancel := tc.ctx()
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := n.Eval(ctx, driver.NewScript(echo), nil, []string{"late"})
				done <- err
			}()
			time.Sleep(end / 3)
			if doContextRunning() {
				t.Error("a goroutine of redigo's DoContext runs during the call; want the call on the caller's goroutine")
			}
			err := <-done
			if el := time.Since(start); !errors.Is(err, tc.want) || el > end+slack {
				t.Errorf("Eval on a paused server, context ending after %v = %v after %v; want %v by %v", end, err, el, tc.want, end+slack)
			}
			s.Resume()
			for i := range 3 {
				if v, err := eval(n, echo, nil, []string{"fresh"}); v != "fresh" || err != nil {
					t.Errorf("Eval #%d after Resume = %v, %v; want fresh, nil", i, v, err)
				}
			}
		})
	}
}

// doContextRunning reports whether a goroutine of redigo's DoContext runs.
func doContextRunning() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte("redis.(*conn).DoContext.func"))
		}
		buf = make([]byte, 2*len(buf))
	}
}
