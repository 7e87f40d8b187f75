package dlm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// BenchmarkSharedCycle measures acquire/release cycles on five real nodes:
// the mutex, a read lock, and semaphores whose permits need 3, 4 and 5 of
// the nodes (limits 1, 2 and 4). Run with -bench SharedCycle.
func BenchmarkSharedCycle(b *testing.B) {
	servers := redistest.StartServers(b, 5)
	var nodes []driver.Node
	for _, s := range servers {
		cfg, _ := driver.ParseURL("redis://" + s.Addr())
		n := resp.NewNode(cfg)
		defer n.Close()
		nodes = append(nodes, n)
	}
	// A generous node timeout: with limit 4 a permit needs every node, and
	// one slow answer on this loaded machine fails the cycle.
	m, err := dlm.New(nodes, dlm.WithNodeTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	take := map[string]func() (*dlm.Lock, error){
		"mutex": func() (*dlm.Lock, error) { return m.TryLock(ctx, "bench-mutex") },
		"read":  func() (*dlm.Lock, error) { return m.TryRLock(ctx, "bench-read") },
	}
	for _, limit := range []int{1, 2, 4} {
		s, err := m.Semaphore("bench-sem", limit)
		if err != nil {
			b.Fatal(err)
		}
		take["semaphore-L"+string(rune('0'+limit))] = func() (*dlm.Lock, error) { return s.TryAcquire(ctx) }
	}
	for _, name := range []string{"mutex", "read", "semaphore-L1", "semaphore-L2", "semaphore-L4"} {
		b.Run(name, func(b *testing.B) {
			var acquiring time.Duration
			failed := 0
			for i := 0; i < b.N; i++ {
				start := time.Now()
				l, err := take[name]()
				acquiring += time.Since(start)
				if errors.Is(err, dlm.ErrUnavailable) {
					failed++ // a node too slow for a quorum of all five
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); errors.Is(err, dlm.ErrUnavailable) {
					failed++
				} else if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(acquiring.Nanoseconds())/float64(b.N), "acquire-ns/op")
			b.ReportMetric(float64(failed)/float64(b.N), "unavailable/op")
		})
	}
}
