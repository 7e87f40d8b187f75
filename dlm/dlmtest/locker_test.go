package dlmtest_test

import (
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/resp"
)

// TestLockerOnRedis runs the Locker suite on a manager over three real
// redis-servers; package memlock runs the same suite in memory.
func TestLockerOnRedis(t *testing.T) {
	servers := dlmtest.StartServers(t, 3)
	dlmtest.TestLocker(t, func(t *testing.T) dlm.Locker {
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
		m, err := dlm.New(nodes, dlm.WithKeyPrefix("locker:"), dlm.WithNodeTimeout(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	})
}
