package bench

import (
	"strings"
	"testing"
	"time"
)

func TestBurstReport(t *testing.T) {
	r := sampleResults()
	withBursts(r)
	for i := range r.Burst {
		for j := range r.Burst[i].Runs {
			run := &r.Burst[i].Runs[j]
			run.MostClients, run.KeysLeft, run.StartLag = 700, 0, 20*time.Millisecond
		}
	}
	goredis := &r.burstOf("goredis", 256).Runs[2]
	goredis.KeysLeft, goredis.LeftTTL, goredis.MarkerOverlaps = 3, 9*time.Second, 2
	goredis.MostClients, goredis.StartLag = 900, 40*time.Millisecond
	goredis.Errors, goredis.FirstError = 1, "open redlock+goredis: refused"
	r.burstOf("redigo", 256).Runs[1].KeysLeft = -1 // not counted
	md := Markdown(r)
	for _, want := range []string{
		"### A cold burst",
		"its own `dlm.Manager` with the default options but a TTL of 10s",
		"holds it 1 ms with its critical section marked",
		"#### 256 processes at once",
		"| library | grants/s of each run | vs redsync | longest without a grant | served | overlaps | connections/process | most clients | keys left | late start | errors |",
		"| redlock+goredis | 1,200, 1,200, 1,200, 1,200, 1,200 | 1.20×, 1.20×, 1.20×, 1.20×, 1.20× | 1.00 s, 1.00 s, 1.00 s, 1.00 s, 1.00 s | 97.7 % | **2** | 2.00 | 900 | 3 (TTL up to 9.00 s) | 40.0 ms | 1 (first: open redlock+goredis: refused) |",
		"| redlock+redigo | 1,200, 1,200, 1,200, 900, 1,200 | 1.20×, 1.20×, 1.20×, 0.90×, 1.20× | 1.00 s, 1.00 s, 2.00 s, 1.00 s, 1.00 s | 78.1 % | **1** | 5.00 | 700 | — | 20.0 ms | 0 |",
		"| redlock+valkey | — | — | — | — | — | — | — | — | — | — |",
		"| redsync v4 (go-redis v9) | 1,000, 1,000, 1,000, 1,000, 1,000 | 1.00×, 1.00×, 1.00×, 1.00×, 1.00× | 3.00 s, 3.00 s, 3.00 s, 3.00 s, 3.00 s | 78.1 % | 0 | 1.00 | 700 | 0 | 20.0 ms | 0 |",
		"#### 64 processes at once",
		"| no 2s window without a grant, in 5 of 5 runs | cold burst: 256 processes started at once on one key, no warm-up, TTL 10s, 1 ms of work, runs of 10s, 5 nodes |",
		"`burst/nN/LIB`",
		"-run '^burst/' -burst 64x1,256x1",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	r.Burst = nil
	if md := Markdown(r); strings.Contains(md, "### A cold burst") {
		t.Error("a run without cold-burst results has their section")
	}
}
