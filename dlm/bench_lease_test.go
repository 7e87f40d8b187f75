package dlm

import (
	"context"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// BenchmarkCoreLeaseCycle is [BenchmarkCoreCycle] for a read lock and a
// semaphore's permit: the core's own time and allocations per cycle over
// five nodes that answer at once.
func BenchmarkCoreLeaseCycle(b *testing.B) {
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
	s, err := m.Semaphore("bench", 2)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		take func() (*Lock, error)
	}{
		{"read", func() (*Lock, error) { return m.TryRLock(ctx, "bench") }},
		{"permit", func() (*Lock, error) { return s.TryAcquire(ctx) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				l, err := bc.take()
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
