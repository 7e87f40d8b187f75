package redigo

import (
	"context"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// BenchmarkEval measures one cached script call, as a lock attempt makes
// it: a per-request deadline, two keys, two arguments.
func BenchmarkEval(b *testing.B) {
	s := redistest.StartServer(b)
	n, err := dlm.OpenNode("redis+redigo://" + s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	script := driver.NewScript("return ARGV[1]")
	keys, args := []string{"{k}a", "{k}b"}, []string{"token", "30000"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if _, err := n.Eval(ctx, script, keys, args); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
