package goredis

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/redistest"
)

func TestNewNodeKeepsClient(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	n := NewNode(c)
	if n.Addr() != s.Addr() {
		t.Errorf("Addr() = %q; want %q", n.Addr(), s.Addr())
	}
	if v, err := eval(n, echo, nil, []string{"wrapped"}); v != "wrapped" || err != nil {
		t.Errorf("Eval = %v, %v; want wrapped, nil", v, err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Errorf("client Ping after the node's Close: %v; want the client open", err)
	}
	if _, err := eval(n, echo, nil, []string{"x"}); !errors.Is(err, errClosed) {
		t.Errorf("Eval after Close = %v; want %v", err, errClosed)
	}
}

func TestNewNodeAddr(t *testing.T) {
	t.Parallel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000"}})
	defer cc.Close()
	if got, want := NewNode(cc).Addr(), "10.0.0.1:7000,10.0.0.2:7000"; got != want {
		t.Errorf("NewNode(cluster client).Addr() = %q; want %q", got, want)
	}
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"10.0.0.3:26379"}})
	defer fc.Close()
	if got := NewNode(fc).Addr(); got == "" {
		t.Error("NewNode(failover client).Addr() is empty")
	}
}
