package rueidis_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/dlmgo/redlock/backends/rueidis"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// BenchmarkLockThroughput measures lock + unlock of distinct keys from
// parallel goroutines (GOMAXPROCS × 8) on a manager of one node: one
// redis-server, or one three-master Redis Cluster, whose keys spread over
// three processes. Report with ops/s (b.N / elapsed).
func BenchmarkLockThroughput(b *testing.B) {
	for _, tc := range []struct {
		name string
		url  func(b *testing.B) string
	}{
		{"plain", func(b *testing.B) string { return "redis+rueidis://" + redistest.StartServer(b).Addr() }},
		{"cluster", func(b *testing.B) string { return redistest.StartRedisCluster(b).URL(rueidis.Name) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := dlm.Open([]string{tc.url(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			var next atomic.Int64
			ctx := context.Background()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l, err := m.TryLock(ctx, "bench-"+strconv.FormatInt(next.Add(1), 10))
					if err != nil {
						b.Error(err)
						return
					}
					if err := l.Unlock(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "locks/s")
		})
	}
}
