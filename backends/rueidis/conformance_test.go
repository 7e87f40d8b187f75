package rueidis_test

import (
	"strings"
	"testing"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/backends/rueidis"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// openURL opens a node through the registry, as dlm.Open does.
func openURL(t testing.TB, url string) driver.Node {
	t.Helper()
	n, err := dlm.OpenNode(url)
	if err != nil {
		t.Fatalf("dlm.OpenNode(%q): %v", url, err)
	}
	return n
}

// newClient makes a rueidis client for addr that t closes.
func newClient(t testing.TB, opt rueidisclient.ClientOption) rueidisclient.Client {
	t.Helper()
	c, err := rueidisclient.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient(%v): %v", opt.InitAddress, err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestConformance(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	t.Run("Open", func(t *testing.T) {
		dlmtest.TestNode(t, func(t *testing.T) driver.Node {
			return openURL(t, "redis+rueidis://"+s.Addr())
		})
	})
	t.Run("NewNode", func(t *testing.T) {
		// A client as a user would build it: defaults, no AlwaysPipelining.
		c := newClient(t, rueidisclient.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true})
		dlmtest.TestNode(t, func(t *testing.T) driver.Node { return rueidis.NewNode(c) })
	})
	t.Run("NewNodeRESP2", func(t *testing.T) {
		c := newClient(t, rueidisclient.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, AlwaysRESP2: true})
		dlmtest.TestNode(t, func(t *testing.T) driver.Node { return rueidis.NewNode(c) })
	})
}

func TestManager(t *testing.T) {
	t.Parallel()
	dlmtest.TestManager(t, func(t *testing.T, addr string) driver.Node {
		return openURL(t, "redis+rueidis://"+addr)
	})
}

// TestManagerOnClusters runs the suite on nodes opened from cluster URLs,
// each a client in cluster mode over a local three-master Redis Cluster.
func TestManagerOnClusters(t *testing.T) {
	t.Parallel()
	dlmtest.TestManagerOnClusters(t, func(t *testing.T, addr string) driver.Node {
		addrs := strings.Split(addr, ",")
		n := openURL(t, "redis+rueidis://"+addrs[0]+"?cluster=true&addr="+strings.Join(addrs[1:], "&addr="))
		if n.Addr() != addr {
			t.Errorf("node Addr = %q; want %q", n.Addr(), addr)
		}
		return n
	})
}

// TestReplicaAck runs the WithReplicaAck suite on a master with a replica.
func TestReplicaAck(t *testing.T) {
	t.Parallel()
	dlmtest.TestReplicaAck(t, func(t *testing.T, addr string) driver.Node {
		n, err := dlm.OpenNode("redis+rueidis://" + addr)
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
		n, err := dlm.OpenNode("redis+rueidis://" + addr + "?sentinel_master=" + redistest.SentinelMaster)
		if err != nil {
			t.Fatalf("OpenNode: %v", err)
		}
		return n
	})
}
