package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunSmoke runs every case of the harness, very briefly, against real
// servers: each library locks and unlocks, the hot-key analysis sees
// hand-offs, and the report renders.
func TestRunSmoke(t *testing.T) {
	bin, err := RedisServerPath("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := StartCluster(ctx, bin, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	var log strings.Builder
	cfg := DefaultConfig()
	cfg.Duration, cfg.HotDuration = 100*time.Millisecond, 300*time.Millisecond
	cfg.Goroutines, cfg.Contenders, cfg.Works = []int{2}, []int{3}, []time.Duration{0}
	cfg.AllocCycles, cfg.PhysBatch, cfg.Rounds = 20, 8, 2
	cfg.Log = &log
	r, err := Run(ctx, cfg, c.Addrs(), c.Servers[0].Version)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	if r.Physical == nil || r.Physical.Pairs == 0 || r.Physical.Failed != 0 {
		t.Errorf("physical limit: %+v", r.Physical)
	}
	for _, lib := range r.Libraries {
		u := r.uncontendedOf(lib.ID, 2)
		if u == nil || u.Cycles == 0 || !onlyTimeouts(u.Errors, u.FirstError) {
			t.Errorf("%s uncontended: %+v", lib.ID, u)
		}
		h := r.hotOf(lib.ID, 3, 0)
		if h == nil || h.Grants == 0 || !onlyTimeouts(h.Errors, h.FirstError) || h.Violations != 0 {
			t.Errorf("%s hot key: %+v", lib.ID, h)
		}
		if l := r.latencyOf(lib.ID); l == nil || l.Acquire.N == 0 || !onlyTimeouts(l.Errors, l.FirstError) {
			t.Errorf("%s latency: %+v", lib.ID, l)
		}
		if a := r.allocsOf(lib.ID); a == nil || a.Allocs <= 0 {
			t.Errorf("%s allocs: %+v", lib.ID, a)
		}
	}
	if md := Markdown(r); !strings.Contains(md, "| redlock+rueidis | 2 |") {
		t.Errorf("report lacks the uncontended row of rueidis:\n%s", md)
	}
	if t.Failed() {
		t.Logf("progress log:\n%s", log.String())
	}
}

// onlyTimeouts reports whether a case had no errors but node timeouts,
// which a machine busy with other tests can cause under the race detector.
func onlyTimeouts(n int, first string) bool {
	return n == 0 || strings.Contains(first, "deadline exceeded") || strings.Contains(first, "timeout")
}
