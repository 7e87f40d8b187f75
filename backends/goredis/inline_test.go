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

// TestNodeDeadlineWaits checks that a call under a context of
// driver.WithNodeDeadline, the kind package dlm sends, waits for its
// request on a goroutine of its own, and returns at the deadline, whether
// or not the client takes its socket deadlines from contexts: the request
// goes on after it, so that its connection reads the late reply rather than
// being closed (TestDriverConns).
func TestNodeDeadlineWaits(t *testing.T) {
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
		name string
		n    driver.Node
	}{
		{"node from a URL", owned},
		{"client without ContextTimeoutEnabled", user},
	} {
		t.Run(tc.name, func(t *testing.T) {
			widening(t, func(t *testing.T, scale time.Duration) string {
				// The deadline leaves the goroutine check below, at a
				// third of it, room on this run's pace.
				deadline, bound := max(300*time.Millisecond, late)*scale, late*scale
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
				if !waiting {
					t.Errorf("no goroutine of node.wait runs during the call; want one")
				}
				err := <-done
				el := time.Since(start)
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
