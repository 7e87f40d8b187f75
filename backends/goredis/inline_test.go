package goredis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestNodeDeadlineInline checks that a call under a context of
// driver.WithNodeDeadline, the kind package dlm sends, runs on the caller's
// goroutine when the client takes its socket deadlines from contexts, and
// still returns at the deadline; and that a client that does not goes on
// waiting on a goroutine of its own.
func TestNodeDeadlineInline(t *testing.T) {
	s := redistest.StartServer(t)
	owned := openNode(t, "redis+goredis://"+s.Addr()+"?read_timeout=10s&write_timeout=10s")
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	user := NewNode(c)
	for _, n := range []driver.Node{owned, user} {
		if v, err := eval(n, echo, nil, []string{"warm"}); v != "warm" || err != nil {
			t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
		}
	}
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
			const deadline = 300 * time.Millisecond
			ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(deadline))
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := tc.n.Eval(ctx, driver.NewScript(echo), nil, []string{"x"})
				done <- err
			}()
			time.Sleep(deadline / 3)
			if waiting := callsRunning(); waiting == tc.inline {
				t.Errorf("a goroutine of node.wait runs = %v during the call; want %v", waiting, !tc.inline)
			}
			err := <-done
			if el := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || el > deadline+slack {
				t.Errorf("Eval on a paused server with a %v node deadline = %v after %v; want context.DeadlineExceeded by %v", deadline, err, el, deadline+slack)
			}
		})
	}
}
