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

// TestRequestsWithoutDoContext checks that a node from a URL does not use
// redigo's DoContext, which starts a goroutine per request of its own and
// closes the connection when the context ends: under a context of
// driver.WithNodeDeadline and under a cancellable one, the call returns when
// its context ends, the request goes on (on the node's goroutine, see
// node.do) and its connection reads the late reply, which is never read as
// the next request's.
func TestRequestsWithoutDoContext(t *testing.T) {
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
						t.Error("a goroutine of redigo's DoContext runs during the call; want none")
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
