package redigo

import (
	"context"
	"errors"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/dlm/redistest"
)

func TestNewNodeKeepsPool(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	p := &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) { return redis.DialContext(ctx, "tcp", s.Addr()) },
		MaxIdle:     2,
	}
	defer p.Close()
	n := NewNode(p, s.Addr())
	if n.Addr() != s.Addr() {
		t.Errorf("Addr() = %q; want %q", n.Addr(), s.Addr())
	}
	if v, err := eval(n, echo, nil, []string{"wrapped"}); v != "wrapped" || err != nil {
		t.Errorf("Eval = %v, %v; want wrapped, nil", v, err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	c, err := p.GetContext(context.Background())
	if err != nil {
		t.Fatalf("pool GetContext after the node's Close: %v; want the pool open", err)
	}
	defer c.Close()
	if _, err := c.Do("PING"); err != nil {
		t.Errorf("PING after the node's Close: %v; want the pool open", err)
	}
	if _, err := eval(n, echo, nil, []string{"x"}); !errors.Is(err, errClosed) {
		t.Errorf("Eval after Close = %v; want %v", err, errClosed)
	}
}
