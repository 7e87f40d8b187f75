package goredis

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
)

// TestConformance runs the driver.Node conformance suite on nodes opened
// from URLs.
func TestConformance(t *testing.T) {
	s := dlmtest.StartServer(t)
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
	s := dlmtest.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	dlmtest.TestNode(t, func(t *testing.T) driver.Node { return NewNode(c) })
}

// TestManager runs the manager-level integration suite on 1, 3 and 5 nodes.
func TestManager(t *testing.T) {
	dlmtest.TestManager(t, func(t *testing.T, addr string) driver.Node {
		n, err := dlm.OpenNode("redis+goredis://" + addr)
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}

// TestManagerOnClusters runs the suite on nodes that each wrap a
// ClusterClient over a local three-master Redis Cluster.
func TestManagerOnClusters(t *testing.T) {
	dlmtest.TestManagerOnClusters(t, func(t *testing.T, addr string) driver.Node {
		c := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: strings.Split(addr, ","), MaxRetries: -1, ContextTimeoutEnabled: true,
		})
		return newNode(c, clientAddr(c), true) // the suite closes the node, which closes c
	})
}
