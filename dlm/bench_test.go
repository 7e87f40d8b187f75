package dlm

import (
	"context"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// instantNode answers every script at once with 1 and allocates nothing, so
// that a benchmark over it measures the core's own cost.
type instantNode struct{ addr string }

func (n instantNode) Eval(context.Context, *driver.Script, []string, []string) (any, error) {
	return int64(1), nil
}
func (n instantNode) Addr() string { return n.addr }
func (n instantNode) Close() error { return nil }

// BenchmarkCoreCycle measures a TryLock and Unlock over five nodes that
// answer at once: the core's own time and allocations per lock cycle, apart
// from any client library's.
func BenchmarkCoreCycle(b *testing.B) {
	nodes := make([]driver.Node, 5)
	for i := range nodes {
		nodes[i] = instantNode{addr: "node-" + string(rune('0'+i))}
	}
	m, err := New(nodes)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		l, err := m.TryLock(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCoreCycleOwner is [BenchmarkCoreCycle] with a holder label
// ([WithOwner]): the cost of the label's request after each grant, beside
// the cycle without one.
func BenchmarkCoreCycleOwner(b *testing.B) {
	nodes := make([]driver.Node, 5)
	for i := range nodes {
		nodes[i] = instantNode{addr: "node-" + string(rune('0'+i))}
	}
	m, err := New(nodes, WithOwner("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		l, err := m.TryLock(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
