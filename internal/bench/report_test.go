package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sampleResults is a small run of made-up numbers: redsync at 2,000
// cycles/s with one goroutine, the backends at 1.5×, 1× and 3× that.
func sampleResults() *Results {
	cfg := DefaultConfig()
	cfg.Goroutines = []int{1, 64}
	cfg.Contenders = []int{8}
	r := &Results{
		Config:    cfg,
		Nodes:     5,
		Libraries: Libraries(),
		Machine: Machine{
			CPU: "Test CPU <x>", Cores: 2, GOMAXPROCS: 2, Go: "go1.26", Redis: "7.0.15",
			OS: "linux", Arch: "amd64", Date: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
			Modules: map[string]string{"github.com/go-redsync/redsync/v4": "v4.18.1"},
		},
		Physical: &PhysicalResult{Nodes: 5, Conns: 2, Batch: 64, Pairs: 5 * 60_000 * 3, Elapsed: 3 * time.Second},
		Elapsed:  90 * time.Second,
	}
	perSecOf := map[string]float64{"goredis": 3000, "redigo": 2000, "rueidis": 6000, "redsync": 2000}
	for _, lib := range r.Libraries {
		rate := perSecOf[lib.ID]
		r.Uncontended = append(r.Uncontended,
			UncontendedResult{Lib: lib.ID, Goroutines: 1, Cycles: int(rate * 3), Elapsed: 3 * time.Second},
			UncontendedResult{Lib: lib.ID, Goroutines: 64, Cycles: int(rate * 3 * 4), Elapsed: 3 * time.Second})
		h0 := HotResult{Lib: lib.ID, Contenders: 8, Window: 6 * time.Second, Grants: 12000, Handoffs: 6000,
			Handoff: Dist{N: 6000, P50: 300 * time.Microsecond, P99: 2 * time.Millisecond},
			Wait:    Dist{N: 12000, P50: time.Millisecond, P99: 5 * time.Millisecond}, WaitMax: 20 * time.Millisecond,
			PerClient: []int{1500, 1500}, Fairness: 1.2}
		h1 := h0
		h1.Work, h1.Grants = time.Millisecond, 3000
		if lib.Baseline {
			h0.Handoffs, h0.Handoff.P50, h0.Fairness, h0.Starved = 60, 120*time.Microsecond, math.Inf(1), 2
			h1.Grants = 2400
		}
		if lib.ID == "redigo" {
			h0.Handoffs, h0.Handoff = 0, Dist{}
		}
		r.Hot = append(r.Hot, h0, h1)
		r.Latency = append(r.Latency, LatencyResult{Lib: lib.ID,
			Acquire: Dist{N: 1000, P50: 300 * time.Microsecond, P99: time.Millisecond},
			Release: Dist{N: 1000, P50: 250 * time.Microsecond, P99: time.Millisecond}})
		allocs := 100.0
		if lib.Baseline {
			allocs = 142
		}
		r.Allocs = append(r.Allocs, AllocResult{Lib: lib.ID, Cycles: 2000, Allocs: allocs, Bytes: 6000})
	}
	return r
}

func TestTargets(t *testing.T) {
	r := sampleResults()
	rows := Targets(r)
	want := []struct {
		target  string
		cells   []string // goredis, redigo, rueidis
		overall Verdict
	}{
		{"hand-off p50 ≤ 1 ms", []string{"300 µs PASS", "no hand-offs MISS", "300 µs PASS"}, Miss},
		{"hand-off p99 ≤ 10 ms", []string{"2.00 ms PASS", "no hand-offs MISS", "2.00 ms PASS"}, Miss},
		{"hand-offs/s to a different holder ≥ 50× redsync's", []string{"100× PASS", "0.00× MISS", "100× PASS"}, Miss},
		{"grants/s ≥ 1.5× redsync's with 1 ms of work inside", []string{"1.25× MISS", "1.25× MISS", "1.25× MISS"}, Miss},
		{"fair mode", []string{"1.20", "1.20", "1.20"}, NotMeasured},
		{"uncontended, 1 goroutine: ≥ 1.5× redsync's cycles/s", []string{"1.50× PASS", "1.00× MISS", "3.00× PASS"}, Miss},
		{"uncontended, 64 goroutines: ≥ 4× redsync's cycles/s on the best backend", []string{"1.50× MISS", "1.00× MISS", "3.00× MISS"}, Miss},
		{"allocations per uncontended lock+unlock", []string{"100 PASS", "100 PASS", "100 PASS"}, Pass},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d target rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		row := rows[i]
		if !strings.HasPrefix(row.Target, w.target) {
			t.Errorf("row %d is %q, want %q", i, row.Target, w.target)
			continue
		}
		for j, c := range row.Cells {
			got := c.Value
			if c.Verdict != NotMeasured {
				got += " " + c.Verdict.String()
			}
			if got != w.cells[j] {
				t.Errorf("%s: %s cell %q, want %q", row.Target, c.Lib, got, w.cells[j])
			}
		}
		if row.Overall != w.overall {
			t.Errorf("%s: overall %v, want %v", row.Target, row.Overall, w.overall)
		}
	}
}

func TestCombine(t *testing.T) {
	cells := func(vs ...Verdict) []TargetCell {
		out := make([]TargetCell, len(vs))
		for i, v := range vs {
			out[i].Verdict = v
		}
		return out
	}
	tests := []struct {
		rule  string
		cells []TargetCell
		want  Verdict
	}{
		{ruleEvery, cells(Pass, Pass, Pass), Pass},
		{ruleEvery, cells(Pass, Miss, Pass), Miss},
		{ruleEvery, cells(Pass, NotMeasured, Pass), Miss},
		{ruleBest, cells(Miss, Pass, Miss), Pass},
		{ruleBest, cells(Miss, Miss, Miss), Miss},
		{ruleEvery, cells(NotMeasured, NotMeasured), NotMeasured},
	}
	for _, tt := range tests {
		if got := combine(tt.rule, tt.cells); got != tt.want {
			t.Errorf("combine(%s, %v) = %v, want %v", tt.rule, tt.cells, got, tt.want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	md := Markdown(sampleResults())
	for _, want := range []string{
		"# Benchmarks\n",
		"![Uncontended lock+unlock cycles/s and hot-key hand-offs/s per library](benchmarks.svg)",
		"| CPU | Test CPU <x>, 2 logical CPUs (GOMAXPROCS 2), shared by the client and all servers |",
		"| Redis | redis-server 7.0.15 × 5 on 127.0.0.1, `--save '' --appendonly no` |",
		"github.com/go-redsync/redsync/v4 v4.18.1",
		"| target | judged on | redsync | redlock+goredis | redlock+redigo | redlock+rueidis | overall |",
		"| allocations per uncontended lock+unlock: fewer than redsync's | one goroutine, lock+unlock back to back | 142 allocs | 100 PASS | 100 PASS | 100 PASS | **PASS** |",
		"| redlock+goredis | 1 | 3,000 | 1.50× | 5.0 % | 0 |",
		"| redsync v4 (go-redis v9) | 64 | 8,000 | 1.00× | 13.3 % | 0 |",
		"### 8 contenders, 0 ms of work inside",
		"| redsync v4 (go-redis v9) | 2,000 | 1.00× | 10 | 1.00× | 120 µs / 2.00 ms | — | 1.00 ms / 5.00 ms | 20.0 ms | ∞ (2 starved) | 0 |",
		"| redlock+rueidis | 300 µs / 1.00 ms | 1.00× | 250 µs / 1.00 ms | 1.00× | 1000 | 0 |",
		"| redlock+goredis | 100 | 6,000 | 0.70× | 0 |",
		"| 5 | 60,000 | 600,000 | 0 |",
		"The best uncontended rate above, redlock+rueidis with 64 goroutines, is 40.0 % of it.",
		"make bench",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "Partial run") {
		t.Error("a full run is reported as partial")
	}
}

func TestErrorsCell(t *testing.T) {
	tests := []struct {
		n     int
		first string
		want  string
	}{
		{0, "", "0"},
		{3, "dlm: a|b", `3 (first: dlm: a\|b)`},
		{1, strings.Repeat("x", 130), "1 (first: " + strings.Repeat("x", 120) + "…)"},
	}
	for _, tt := range tests {
		if got := errorsCell(tt.n, tt.first); got != tt.want {
			t.Errorf("errorsCell(%d, %q) = %q, want %q", tt.n, tt.first, got, tt.want)
		}
	}
}

func TestWriteReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "docs")
	r := sampleResults()
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{MarkdownFile: Markdown(r), ChartFile: Chart(r)} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s differs from what was rendered", name)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files in the report directory, want 2 (no temporary files left)", len(entries))
	}
}
