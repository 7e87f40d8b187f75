package mixed

import (
	"sync/atomic"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"

	_ "github.com/dlmgo/redlock/backends/goredis"
	_ "github.com/dlmgo/redlock/backends/redigo"
	_ "github.com/dlmgo/redlock/backends/rueidis"
	_ "github.com/dlmgo/redlock/backends/valkeygo"
)

var schemes = []string{"redis+goredis://", "redis+redigo://", "redis+rueidis://", "redis+valkey://"}

func TestManagerMixingBackends(t *testing.T) {
	t.Parallel()
	var next atomic.Int64
	dlmtest.TestManager(t, func(t *testing.T, addr string) driver.Node {
		scheme := schemes[next.Add(1)%int64(len(schemes))]
		n, err := dlm.OpenNode(scheme + addr)
		if err != nil {
			t.Fatalf("OpenNode(%s%s): %v", scheme, addr, err)
		}
		return n
	})
}

func TestAllDriversRegistered(t *testing.T) {
	t.Parallel()
	got := dlm.Drivers()
	want := []string{"goredis", "redigo", "rueidis", "valkey"}
	if len(got) != len(want) {
		t.Fatalf("Drivers() = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Drivers() = %v; want %v", got, want)
		}
	}
}
