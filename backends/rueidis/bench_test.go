package rueidis_test

import (
	"context"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// BenchmarkEval measures one acquire-like script call, the hot path of a
// lock operation; run with -benchmem for allocs/op.
func BenchmarkEval(b *testing.B) {
	s := redistest.StartServer(b)
	n := openURL(b, "redis+rueidis://"+s.Addr())
	defer n.Close()
	sc := driver.NewScript("return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) and 1")
	keys, args := []string{"bench:{k}"}, []string{"token-0123456789abcdef", "30000"}
	call := func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), 5e9)
		defer cancel()
		if v, err := n.Eval(ctx, sc, keys, args); err != nil || v != int64(1) {
			b.Fatalf("Eval = %#v, %v; want 1, nil", v, err)
		}
	}
	call(b)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			call(b)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call(b)
			}
		})
	})
}
