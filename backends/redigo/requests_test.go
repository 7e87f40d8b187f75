package redigo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	// The read and write timeouts outlast every context below: a call that
	// returns before them was ended by its context.
	n := openNode(t, "redis+redigo://"+s.Addr()+"?read_timeout=1m&write_timeout=1m&pool_size=1")
	if v, err := eval(n, echo, nil, []string{"warm"}); v != "warm" || err != nil {
		t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
	}
	late := lateBound(t, s)
	for _, tc := range []struct {
		name string
		ctx  func(end time.Duration) (context.Context, context.CancelFunc)
		want error
	}{
		{"node deadline", func(end time.Duration) (context.Context, context.CancelFunc) {
			return driver.WithNodeDeadline(context.Background(), time.Now().Add(end))
		}, context.DeadlineExceeded},
		{"cancelled", func(end time.Duration) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(end, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			widening(t, func(t *testing.T, scale time.Duration) string {
				// The context's end leaves the goroutine check below, at
				// a third of it, room on this run's pace.
				end, bound := max(300*time.Millisecond, late)*scale, late*scale
				s.Pause()
				ctx, cancel := tc.ctx(end)
				defer cancel()
				done := make(chan error, 1)
				start := time.Now()
				go func() {
					_, err := n.Eval(ctx, driver.NewScript(echo), nil, []string{"late"})
					done <- err
				}()
				time.Sleep(end / 3)
				running := doContextRunning()
				var err error
				var why string
				select {
				case err = <-done:
					why = fmt.Sprintf("the call had returned, %v after it started, when the goroutines were looked at", time.Since(start))
				default:
					if running {
						t.Error("a goroutine of redigo's DoContext runs during the call; want the call on the caller's goroutine")
					}
					err = <-done
				}
				el := time.Since(start)
				if !errors.Is(err, tc.want) {
					t.Errorf("Eval on a paused server, context ending after %v = %v after %v; want %v", end, err, el, tc.want)
				} else if why == "" && el > end+bound {
					why = fmt.Sprintf("Eval, context ending after %v, ended with it but %v after it started (bound %v)", end, el, end+bound)
				}
				s.Resume()
				for i := range 3 {
					if v, err := eval(n, echo, nil, []string{"fresh"}); v != "fresh" || err != nil {
						t.Errorf("Eval #%d after Resume = %v, %v; want fresh, nil", i, v, err)
					}
				}
				return why
			})
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
