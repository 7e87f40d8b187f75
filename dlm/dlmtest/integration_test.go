package dlmtest_test

import (
	"testing"

	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/resp"
)

// TestManagerOnResp runs the manager suite over the raw RESP adapter, so the
// core is proven on real Redis without any client library.
func TestManagerOnResp(t *testing.T) {
	t.Parallel()
	dlmtest.TestManager(t, func(t *testing.T, addr string) driver.Node {
		cfg, err := driver.ParseURL("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		return resp.NewNode(cfg)
	})
}
