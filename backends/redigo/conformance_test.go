package redigo

import (
	"context"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestConformance runs the driver.Node conformance suite on nodes opened
// from URLs.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	dlmtest.TestNode(t, func(t *testing.T) driver.Node {
		n, err := dlm.OpenNode("redis+redigo://" + s.Addr())
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}

// TestConformanceWrapped runs it on nodes wrapping one pool built as
// redigo's documentation shows, with a DialContext and no bound.
func TestConformanceWrapped(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	p := &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) { return redis.DialContext(ctx, "tcp", s.Addr()) },
		MaxIdle:     8,
	}
	t.Cleanup(func() { p.Close() })
	dlmtest.TestNode(t, func(t *testing.T) driver.Node { return NewNode(p, s.Addr()) })
}

// TestManager runs the manager-level integration suite on 1, 3 and 5 nodes.
func TestManager(t *testing.T) {
	t.Parallel()
	dlmtest.TestManager(t, func(t *testing.T, addr string) driver.Node {
		n, err := dlm.OpenNode("redis+redigo://" + addr)
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}

// TestReplicaAck runs the WithReplicaAck suite on a master with a replica.
func TestReplicaAck(t *testing.T) {
	t.Parallel()
	dlmtest.TestReplicaAck(t, func(t *testing.T, addr string) driver.Node {
		n, err := dlm.OpenNode("redis+redigo://" + addr)
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}
