package goredis

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

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
		n, err := dlm.OpenNode("redis+goredis://" + s.Addr())
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}

// TestConformanceWrapped runs it on nodes wrapping one client built with
// go-redis' defaults, ContextTimeoutEnabled unset among them.
func TestConformanceWrapped(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	dlmtest.TestNode(t, func(t *testing.T) driver.Node { return NewNode(c) })
}

// TestManager runs the manager-level integration suite on 1, 3 and 5 nodes.
func TestManager(t *testing.T) {
	t.Parallel()
	dlmtest.TestManager(t, func(t *testing.T, addr string) driver.Node {
		n, err := dlm.OpenNode("redis+goredis://" + addr)
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}

// TestManagerOnClusters runs the suite on nodes opened from cluster URLs,
// each a ClusterClient over a local three-master Redis Cluster.
func TestManagerOnClusters(t *testing.T) {
	t.Parallel()
	dlmtest.TestManagerOnClusters(t, func(t *testing.T, addr string) driver.Node {
		addrs := strings.Split(addr, ",")
		n, err := dlm.OpenNode("redis+goredis://" + addrs[0] + "?cluster=true&addr=" + strings.Join(addrs[1:], "&addr="))
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}

// TestNewNodeCluster checks a node wrapping a ClusterClient the user built:
// it names itself by the seed addresses, says it is a cluster, so that a
// lock over keys of two slots is refused up front, and takes locks.
func TestNewNodeCluster(t *testing.T) {
	t.Parallel()
	rc := redistest.StartRedisCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs()})
	defer c.Close()
	n := NewNode(c)
	if n.Addr() != rc.Addr() {
		t.Errorf("Addr = %q; want %q", n.Addr(), rc.Addr())
	}
	if s, ok := n.(driver.Sharded); !ok || !s.Sharded() {
		t.Error("NewNode(ClusterClient) does not report Sharded")
	}
	if NewNode(redis.NewClient(&redis.Options{Addr: rc.Addrs()[0]})).(driver.Sharded).Sharded() {
		t.Error("NewNode(Client) reports Sharded")
	}
	m, err := dlm.New([]driver.Node{n})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	if _, err := m.TryLockAll(ctx, []string{"a", "b"}); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("TryLockAll over keys of two slots = %v; want ErrInvalid", err)
	}
	l, err := m.TryLockAll(ctx, []string{"{o}:a", "{o}:b"}, dlm.WithFencing())
	if err != nil {
		t.Fatalf("TryLockAll over keys sharing a tag: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// TestReplicaAck runs the WithReplicaAck suite on a master with a replica.
func TestReplicaAck(t *testing.T) {
	t.Parallel()
	dlmtest.TestReplicaAck(t, func(t *testing.T, addr string) driver.Node {
		n, err := dlm.OpenNode("redis+goredis://" + addr)
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}

// TestSentinelFailover runs Do across a Sentinel failover on a node opened
// from a Sentinel URL.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	dlmtest.TestSentinelFailover(t, func(t *testing.T, addr string) driver.Node {
		n, err := dlm.OpenNode("redis+goredis://" + addr + "?sentinel_master=" + redistest.SentinelMaster)
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}
