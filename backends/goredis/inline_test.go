package goredis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestNodeDeadlineInline checks that a call under a context of
// driver.WithNodeDeadline, the kind package dlm sends, runs on the caller's
// goroutine when the client takes its socket deadlines from contexts and
// no request of the node ran past its deadline lately (node.inline), and
// still returns at the deadline; and that it waits on a goroutine of its
// own when the client does not, or once a request timed out (the first
// call here does), so that its connection can read the late reply.
func TestNodeDeadlineInline(t *testing.T) {
	s := redistest.StartServer(t)
	// The read and write timeouts outlast every deadline below: a call that
	// returns before them was ended by its context.
	owned := openNode(t, "redis+goredis://"+s.Addr()+"?read_timeout=1m&write_timeout=1m")
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	user := NewNode(c)
	for _, n := range []driver.Node{owned, user} {
		if v, err := eval(n, echo, nil, []string{"warm"}); v != "warm" || err != nil {
			t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
		}
	}
	late := lateBound(t, s)
	s.Pause()
	defer s.Resume()
	for _, tc := range []struct {
		name   string
		n      driver.Node
		inline bool
	}{
		{"node from a URL", owned, true},
		{"client without ContextTimeoutEnabled", user, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			widening(t, func(t *testing.T, scale time.Duration) string {
				// The deadline leaves the goroutine check below, at a
				// third of it, room on this run's pace.
				deadline, bound := max(300*time.Millisecond, late)*scale, late*scale
				slow := tc.n.(*node).slow.Slow()
				inline := tc.inline && !slow
				ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(deadline))
				defer cancel()
				done := make(chan error, 1)
				start := time.Now()
				go func() {
					_, err := tc.n.Eval(ctx, driver.NewScript(echo), nil, []string{"x"})
					done <- err
				}()
				time.Sleep(deadline / 3)
				waiting := callsRunning()
				select {
				case err := <-done:
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Eval on a paused server with a %v node deadline = %v after %v; want context.DeadlineExceeded", deadline, err, time.Since(start))
					}
					return fmt.Sprintf("the call had returned, %v after it started, when the goroutines were looked at", time.Since(start))
				default:
				}
				if waiting == inline {
					t.Errorf("a goroutine of node.wait runs = %v during the call (node slow: %v); want %v", waiting, slow, !inline)
				}
				err := <-done
				el := time.Since(start)
				if !tc.n.(*node).slow.Slow() {
					t.Error("the node is not slow after a request timed out; want slow")
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Eval on a paused server with a %v node deadline = %v after %v; want context.DeadlineExceeded", deadline, err, el)
				} else if el > deadline+bound {
					return fmt.Sprintf("Eval with a %v node deadline ended with it, but %v after it started (bound %v)", deadline, el, deadline+bound)
				}
				return ""
			})
		})
	}
}
