package dlmtest_test

import (
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// TestLockerOnRedis runs the Locker suite on a manager over three real
// redis-servers; package memlock runs the same suite in memory.
func TestLockerOnRedis(t *testing.T) {
	t.Parallel()
	servers := redistest.StartServers(t, 3)
	dlmtest.TestLocker(t, func(t *testing.T) dlm.Locker {
		return openManager(t, servers, dlm.WithKeyPrefix("locker:"), dlm.WithNodeTimeout(200*time.Millisecond))
	})
}

// TestSharedOnRedis runs the suite of the read-write lock and the semaphore
// on a manager over three real redis-servers; package memlock runs the
// same suite in memory. A semaphore's permit of the suite's limit of 2
// needs all three nodes: the node timeout is generous, so that one slow
// answer on a loaded machine does not fail it.
func TestSharedOnRedis(t *testing.T) {
	t.Parallel()
	servers := redistest.StartServers(t, 3)
	dlmtest.TestShared(t, func(t *testing.T) *dlm.Manager {
		return openManager(t, servers, dlm.WithKeyPrefix("shared:"), dlm.WithNodeTimeout(500*time.Millisecond))
	})
}

// openManager returns a manager over servers, closed with the test.
func openManager(t *testing.T, servers []*redistest.Server, opts ...dlm.ManagerOption) *dlm.Manager {
	var nodes []driver.Node
	for _, s := range servers {
		cfg, err := driver.ParseURL("redis://" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n := resp.NewNode(cfg)
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	m, err := dlm.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
