package goredis

import (
	"context"
	"strconv"
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
	n, err := dlm.OpenNode("redis+goredis://" + s.Addr())
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

// BenchmarkNodeCall compares a script call with SET NX GET, both as package
// dlm sends them: under a context of driver.WithNodeDeadline.
func BenchmarkNodeCall(b *testing.B) {
	s := redistest.StartServer(b)
	n, err := dlm.OpenNode("redis+goredis://" + s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	script := driver.NewScript("return ARGV[1]")
	b.Run("Eval", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(time.Second))
			if _, err := n.Eval(ctx, script, []string{"{k}a"}, []string{"token", "30000"}); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
	})
	round := 0
	b.Run("SetNXGet", func(b *testing.B) { // a free key each time, as a lock finds it
		round++
		keys := make([]string, b.N)
		for i := range keys {
			keys[i] = "{k}" + strconv.Itoa(round) + ":" + strconv.Itoa(i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(time.Second))
			if v, err := n.(driver.Setter).SetNXGet(ctx, keys[i], "token", "30000"); v != nil || err != nil {
				b.Fatalf("SetNXGet = %v, %v; want nil, nil", v, err)
			}
			cancel()
		}
	})
}
