package bench

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// defaultModeLibraries returns Libraries without redlock's fairness mode.
func defaultModeLibraries() []Library {
	var out []Library
	for _, lib := range Libraries() {
		if !lib.Fair {
			out = append(out, lib)
		}
	}
	return out
}

// sampleResults is a small run of made-up numbers: redsync at 2,000
// cycles/s with one goroutine, the backends at 1.5×, 1×, 3× and 2× that; on the
// hot key with a shared client the backends hand over 100× as often as
// redsync, with a client each 10×.
func sampleResults() *Results {
	cfg := DefaultConfig()
	cfg.Goroutines = []int{1, 64}
	cfg.Contenders = []int{8}
	r := &Results{
		Config:    cfg,
		Nodes:     5,
		Libraries: defaultModeLibraries(),
		Machine: Machine{
			CPU: "Test CPU <x>", Cores: 2, GOMAXPROCS: 2, Go: "go1.26", Redis: "7.0.15",
			OS: "linux", Arch: "amd64", Date: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
			Modules: map[string]string{"github.com/go-redsync/redsync/v4": "v4.18.1"},
		},
		Physical: &PhysicalResult{Nodes: 5, Conns: 2, Batch: 64, Pairs: 5 * 60_000 * 3, Elapsed: 3 * time.Second},
		Elapsed:  90 * time.Second,
	}
	perSecOf := map[string]float64{"goredis": 3000, "redigo": 2000, "rueidis": 6000, "valkey": 4000, "redsync": 2000}
	cpuOf := map[string]time.Duration{"goredis": 150 * time.Microsecond, "redigo": 200 * time.Microsecond, "rueidis": 100 * time.Microsecond, "valkey": 120 * time.Microsecond, "redsync": 200 * time.Microsecond}
	for _, lib := range r.Libraries {
		rate := perSecOf[lib.ID]
		r.Uncontended = append(r.Uncontended,
			UncontendedResult{Lib: lib.ID, Goroutines: 1, Cycles: int(rate * 3), Elapsed: 3 * time.Second, CPU: time.Duration(rate*3) * cpuOf[lib.ID]},
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
		// With a client each: fewer, slower hand-offs, as many grants as
		// redsync with work.
		p0, p1 := h0, h1
		p0.Clients, p1.Clients = ClientPerContender, ClientPerContender
		if !lib.Baseline {
			p0.Handoffs, p0.Handoff = 600, Dist{N: 600, P50: 2 * time.Millisecond, P99: 12 * time.Millisecond}
			p1.Grants = 2400
		}
		r.Hot = append(r.Hot, h0, h1, p0, p1)
		f := HotResult{Lib: lib.ID, Clients: ClientPerContender, Contenders: 8, Window: 10 * time.Second, Grants: 5000, Handoffs: 4000,
			PerClient: []int{500, 800}, Fairness: 1.6}
		if lib.Baseline {
			f.PerClient, f.Fairness, f.Starved = []int{0, 900}, math.Inf(1), 1
		}
		r.Fair = append(r.Fair, f)
		r.Latency = append(r.Latency, LatencyResult{Lib: lib.ID,
			Acquire: Dist{N: 1000, P50: 300 * time.Microsecond, P99: time.Millisecond},
			Release: Dist{N: 1000, P50: 250 * time.Microsecond, P99: time.Millisecond}})
		allocs := 100.0
		if lib.Baseline {
			allocs = 142
		}
		r.Allocs = append(r.Allocs, AllocResult{Lib: lib.ID, Cycles: 2000, Allocs: allocs, Bytes: 6000})
		// redlock's leases, with one goroutine only: the read lock at
		// 0.9× the mutex, the semaphore at half.
		if !lib.Baseline {
			r.Shared = append(r.Shared,
				SharedResult{Kind: KindRead, UncontendedResult: UncontendedResult{Lib: lib.ID, Goroutines: 1, Cycles: int(rate * 3 * 0.9), Elapsed: 3 * time.Second}},
				SharedResult{Kind: KindSemaphore, UncontendedResult: UncontendedResult{Lib: lib.ID, Goroutines: 1, Cycles: int(rate * 3 / 2), Elapsed: 3 * time.Second,
					CPU: time.Duration(rate*3/2) * 2 * cpuOf[lib.ID], ServerCPU: time.Duration(rate*3/2) * 300 * time.Microsecond, Errors: 1, FirstError: "dlm: boom"}})
			r.SharedAllocs = append(r.SharedAllocs,
				SharedAllocResult{Kind: KindRead, AllocResult: AllocResult{Lib: lib.ID, Cycles: 2000, Allocs: 105}},
				SharedAllocResult{Kind: KindSemaphore, AllocResult: AllocResult{Lib: lib.ID, Cycles: 2000, Allocs: 110.5}})
		}
	}
	// The bare floor at 4,000 cycles/s with one goroutine.
	r.Uncontended = append(r.Uncontended, UncontendedResult{Lib: FloorID, Goroutines: 1, Cycles: 12000, Elapsed: 3 * time.Second})
	// Fencing over goredis alone, at 0.9× its default mode.
	r.Uncontended = append(r.Uncontended, UncontendedResult{Lib: "goredis-fenced", Goroutines: 1, Cycles: 8100, Elapsed: 3 * time.Second})
	return r
}

func TestTargets(t *testing.T) {
	r := sampleResults()
	rows := Targets(r)
	none := []string{"—", "—", "—", "—"}
	want := []struct {
		target   string
		scenario string   // part of it
		cells    []string // goredis, redigo, rueidis, valkey
		overall  Verdict
	}{
		{"hand-off p50 ≤ 1 ms", "sharing one client", []string{"300 µs PASS", "no hand-offs MISS", "300 µs PASS", "300 µs PASS"}, Miss},
		{"hand-off p50 ≤ 1 ms", "with a client each", []string{"2.00 ms MISS", "2.00 ms MISS", "2.00 ms MISS", "2.00 ms MISS"}, Miss},
		{"hand-off p99 ≤ 10 ms", "sharing one client", []string{"2.00 ms PASS", "no hand-offs MISS", "2.00 ms PASS", "2.00 ms PASS"}, Miss},
		{"hand-off p99 ≤ 10 ms", "with a client each", []string{"12.0 ms MISS", "12.0 ms MISS", "12.0 ms MISS", "12.0 ms MISS"}, Miss},
		{"hand-offs/s to a different holder ≥ 50× redsync's", "sharing one client", []string{"100× PASS", "0.00× MISS", "100× PASS", "100× PASS"}, Miss},
		{"hand-offs/s to a different holder ≥ 50× redsync's", "with a client each", []string{"10.0× MISS", "10.0× MISS", "10.0× MISS", "10.0× MISS"}, Miss},
		{"grants/s ≥ 1.5× redsync's with 1 ms of work inside", "sharing one client", []string{"1.25× MISS", "1.25× MISS", "1.25× MISS", "1.25× MISS"}, Miss},
		{"grants/s ≥ 1.5× redsync's with 1 ms of work inside", "with a client each", []string{"1.00× MISS", "1.00× MISS", "1.00× MISS", "1.00× MISS"}, Miss},
		// The contention targets, on process cases this run does not have.
		{"grants/s ≥ 1× redsync's", "64 contenders in processes of their own, 0 ms", none, NotMeasured},
		{"hand-offs/s to a different holder ≥ 5× redsync's", "64 contenders in processes of their own, 0 ms", none, NotMeasured},
		{"p99 wait ≤ 250 ms", "64 contenders in processes of their own, 0 ms", none, NotMeasured},
		{"max/min grants per contender ≤ 2", "64 contenders in processes of their own, 0 ms", none, NotMeasured},
		{"fair mode: max/min grants per contender ≤ 1.2", "64 contenders in processes of their own, 0 ms", none, NotMeasured},
		{"no collapse", "64 contenders in processes of their own, 0 ms", none, NotMeasured},
		{"grants/s ≥ 1× redsync's", "64 contenders in processes of their own, 1 ms", none, NotMeasured},
		{"hand-offs/s to a different holder ≥ 5× redsync's", "64 contenders in processes of their own, 1 ms", none, NotMeasured},
		{"p99 wait ≤ 250 ms", "64 contenders in processes of their own, 1 ms", none, NotMeasured},
		{"max/min grants per contender ≤ 2", "64 contenders in processes of their own, 1 ms", none, NotMeasured},
		{"fair mode: max/min grants per contender ≤ 1.2", "64 contenders in processes of their own, 1 ms", none, NotMeasured},
		{"no collapse", "64 contenders in processes of their own, 1 ms", none, NotMeasured},
		{"hand-offs/s to a different holder ≥ 50× redsync's", "8 contenders in processes of their own, 0 ms", none, NotMeasured},
		{"grants/s ≥ 1.2× redsync's with 1 ms of work inside", "8 contenders in processes of their own, 1 ms", none, NotMeasured},
		{"Redis commands per hand-off at 256 contenders ≤ 2× that at 8", "0 ms of work", none, NotMeasured},
		{"servers' CPU time per hand-off at 256 contenders ≤ 2× that at 8", "0 ms of work", none, NotMeasured},
		{"Redis commands per hand-off at 256 contenders ≤ 2× that at 8", "1 ms of work", none, NotMeasured},
		{"servers' CPU time per hand-off at 256 contenders ≤ 2× that at 8", "1 ms of work", none, NotMeasured},
		// The burst targets, on cold-burst cases this run does not have.
		{"no 2s window without a grant, in 5 of 5 runs", "cold burst: 256 processes", none, NotMeasured},
		{"grants/s ≥ redsync's in the same run, in 5 of 5 runs", "cold burst: 256 processes", none, NotMeasured},
		{"≥ 90% of processes served, in 5 of 5 runs", "cold burst: 256 processes", none, NotMeasured},
		{"0 overlaps of critical sections, in 5 of 5 runs", "cold burst: 256 processes", none, NotMeasured},
		{"each node accepts ≤ 4 connections per process over the run, in 5 of 5 runs", "cold burst: 256 processes", none, NotMeasured},
		{"no 2s window without a grant, in 5 of 5 runs", "cold burst: 64 processes", none, NotMeasured},
		{"every admitted auto-extended lock kept (0 lost), the rest refused with ErrOverloaded", "held locks", none, NotMeasured},
		{"≤ 1 Warn line per node per second", "held locks", none, NotMeasured},
		{"Close() with the locks held: 0 Warn lines", "held locks", none, NotMeasured},
		{"fair mode: max/min grants per client ≤ 1.5 over a 10s run", "default mode for reference", []string{"1.60", "1.60", "1.60", "1.60"}, NotMeasured},
		{"uncontended, 1 goroutine: ≥ 1.5× redsync's cycles/s", "1 goroutine", []string{"1.50× PASS", "1.00× MISS", "3.00× PASS", "2.00× PASS"}, Miss},
		{"uncontended, 32–64 goroutines: ≥ 4× redsync's cycles/s on the best backend", "64 goroutines", []string{"1.50× MISS", "1.00× MISS", "3.00× MISS", "2.00× MISS"}, Miss},
		{"uncontended, 1 goroutine: ≥ 1× redsync's cycles/s", "1 goroutine", []string{"1.50× PASS", "1.00× PASS", "3.00× PASS", "2.00× PASS"}, Pass},
		{"uncontended, 32–64 goroutines: ≥ 1× redsync's cycles/s", "64 goroutines", []string{"1.50× PASS", "1.00× PASS", "3.00× PASS", "2.00× PASS"}, Pass},
		{"uncontended, 32–64 goroutines: redlock+goredis ≥ 1.3× redsync's cycles/s", "64 goroutines", []string{"1.50× PASS", "1.00×", "3.00×", "2.00×"}, Pass},
		{"allocations per uncontended lock+unlock", "one goroutine", []string{"100 PASS", "100 PASS", "100 PASS", "100 PASS"}, Pass},
		{"client CPU per uncontended lock+unlock (reported)", "1 goroutine", []string{"150 µs (0.75×)", "200 µs (1.00×)", "100 µs (0.50×)", "120 µs (0.60×)"}, NotMeasured},
		{"client CPU per uncontended lock+unlock (reported)", "64 goroutines", []string{"—", "—", "—", "—"}, NotMeasured},
		// The light path's targets: the floor at 4,000 cycles/s.
		{"uncontended, 1 goroutine: ≥ 0.95 of the bare floor's cycles/s on the best backend", "the floor measured in the same rounds", []string{"0.75× MISS", "0.50× MISS", "1.50× PASS", "1.00× PASS"}, Pass},
		{"uncontended, 1 goroutine: ≥ 0.85 of the bare floor's cycles/s", "the floor measured in the same rounds", []string{"0.75× MISS", "0.50× MISS", "1.50× PASS", "1.00× PASS"}, Miss},
		{"uncontended, 32–64 goroutines: ≥ 1.5× redsync's cycles/s", "64 goroutines", []string{"1.50× PASS", "1.00× MISS", "3.00× PASS", "2.00× PASS"}, Miss},
		{"servers' CPU per uncontended lock+unlock ≤ redsync's", "1 goroutine", none, NotMeasured},
		{"client CPU per uncontended lock+unlock ≤ 0.7× redsync's", "1 goroutine", []string{"150 µs (0.75×) MISS", "200 µs (1.00×) MISS", "100 µs (0.50×) PASS", "120 µs (0.60×) PASS"}, Miss},
		{"fair mode, uncontended: ≥ 0.85 of the default mode's cycles/s", "1 goroutine", none, NotMeasured},
		{"fencing, uncontended: ≥ 0.85 of the default mode's cycles/s", "dlm.WithFencing()", []string{"0.90× PASS", "—", "—", "—"}, Miss},
		{"the restart guard, uncontended: ≥ 0.85 of the default mode's cycles/s", "1 goroutine", none, NotMeasured},
		{"servers' CPU per hand-off ≤ 1.5× an uncontended cycle's", "8 contenders in processes of their own", none, NotMeasured},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d target rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		row := rows[i]
		if !strings.HasPrefix(row.Target, w.target) || !strings.Contains(row.Scenario, w.scenario) {
			t.Errorf("row %d is %q on %q, want %q on %q", i, row.Target, row.Scenario, w.target, w.scenario)
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

// withFairMode adds redlock's fairness mode over goredis and rueidis to r,
// before the baseline as in Libraries, with their results in the fairness
// case only: 1.4, and one client starved.
func withFairMode(r *Results) {
	base := r.Libraries[len(r.Libraries)-1]
	r.Libraries = r.Libraries[:len(r.Libraries)-1]
	for _, b := range []string{"goredis", "rueidis"} {
		r.Libraries = append(r.Libraries, Library{ID: b + "-fair", Name: "redlock+" + b + " fair", Backend: b, Mode: "fair",
			Options: "dlm.WithFairness(dlm.Fairness{})", Fair: true})
	}
	r.Libraries = append(r.Libraries, base)
	r.Fair = append(r.Fair,
		HotResult{Lib: "goredis-fair", Clients: ClientPerContender, Contenders: 2, Window: 10 * time.Second, Grants: 1200, PerClient: []int{500, 700}, Fairness: 1.4},
		HotResult{Lib: "rueidis-fair", Clients: ClientPerContender, Contenders: 2, Window: 10 * time.Second, Grants: 700, PerClient: []int{0, 700}, Fairness: math.Inf(1), Starved: 1})
}

func TestFairTarget(t *testing.T) {
	tests := []struct {
		name     string
		run      time.Duration
		cells    []string // goredis, redigo, rueidis, valkey
		overall  Verdict
		scenario string
		note     string
	}{
		{"10s run", 10 * time.Second, []string{"1.40 PASS", "—", "∞ (1 starved) MISS", "—"}, Miss, "one 10s run, redlock+BACKEND fair", ""},
		{"shorter run", 3 * time.Second, []string{"1.40 PASS", "—", "∞ (1 starved) MISS", "—"}, Miss, "one 3s run, redlock+BACKEND fair", "judged on a 3s run, shorter than the 10s the target names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sampleResults()
			r.Config.FairDuration = tt.run
			withFairMode(r)
			row := r.fairTarget()
			var got []string
			for _, c := range row.Cells {
				cell := c.Value
				if c.Verdict != NotMeasured {
					cell += " " + c.Verdict.String()
				}
				got = append(got, cell)
			}
			if !slices.Equal(got, tt.cells) || row.Overall != tt.overall {
				t.Errorf("fairTarget() cells %q, overall %v; want %q, %v", got, row.Overall, tt.cells, tt.overall)
			}
			if !strings.Contains(row.Scenario, tt.scenario) || row.Note != tt.note {
				t.Errorf("fairTarget() on %q, note %q; want %q, %q", row.Scenario, row.Note, tt.scenario, tt.note)
			}
			if row.Baseline != "∞ (1 starved)" {
				t.Errorf("fairTarget() baseline %q, want redsync's ∞ (1 starved)", row.Baseline)
			}
		})
	}
	// The fair libraries are judged for fairness only.
	r := sampleResults()
	withFairMode(r)
	for _, lib := range r.backends() {
		if lib.Fair {
			t.Errorf("backends() includes %s, a fair mode", lib.ID)
		}
	}
}

func TestLibraries(t *testing.T) {
	type lib struct {
		id, name, backend string
		fair, baseline    bool
	}
	want := []lib{
		{"goredis", "redlock+goredis", "goredis", false, false},
		{"redigo", "redlock+redigo", "redigo", false, false},
		{"rueidis", "redlock+rueidis", "rueidis", false, false},
		{"valkey", "redlock+valkey", "valkey", false, false},
		{"goredis-fair", "redlock+goredis fair", "goredis", true, false},
		{"redigo-fair", "redlock+redigo fair", "redigo", true, false},
		{"rueidis-fair", "redlock+rueidis fair", "rueidis", true, false},
		{"valkey-fair", "redlock+valkey fair", "valkey", true, false},
		{"redsync", "redsync v4 (go-redis v9)", "", false, true},
	}
	var got []lib
	for _, l := range Libraries() {
		got = append(got, lib{l.ID, l.Name, l.Backend, l.Fair, l.Baseline})
		if l.Open == nil {
			t.Errorf("%s cannot be opened", l.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Libraries() = %v, want %v", got, want)
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
		"](benchmarks.svg)",
		"| CPU | Test CPU <x>, 2 logical CPUs (GOMAXPROCS 2), shared by the client and all servers |",
		"| Redis | redis-server 7.0.15 × 5 on 127.0.0.1, `--save '' --appendonly no` |",
		"github.com/go-redsync/redsync/v4 v4.18.1",
		"| target | judged on | redsync | redlock+goredis | redlock+redigo | redlock+rueidis | redlock+valkey | overall |",
		"| allocations per uncontended lock+unlock: fewer than redsync's | one goroutine, lock+unlock back to back | 142 allocs | 100 PASS | 100 PASS | 100 PASS | 100 PASS | **PASS** |",
		"| redlock+goredis | 1 | 3,000 | 1.50× | 0.75× | 150 µs | — | 5.0 % | 0 |",
		"| bare floor (RESP by hand) | 1 | 4,000 | 2.00× | 1.00× | — | — | 6.7 % | 0 |",
		"| redsync v4 (go-redis v9) | 64 | 8,000 | 1.00× | — | — | — | 13.3 % | 0 |",
		"| uncontended, 1 goroutine: ≥ 1× redsync's cycles/s | uncontended, 1 goroutine on keys of their own | 2,000 cycles/s | 1.50× PASS | 1.00× PASS | 3.00× PASS | 2.00× PASS | **PASS** |",
		"| uncontended, 32–64 goroutines: redlock+goredis ≥ 1.3× redsync's cycles/s | uncontended, 64 goroutines on keys of their own | 8,000 cycles/s | 1.50× PASS | 1.00× | 3.00× | 2.00× | **PASS** (goredis) |",
		"| client CPU per uncontended lock+unlock (reported) | uncontended, 1 goroutine on keys of their own; getrusage of the client process over the case | 200 µs | 150 µs (0.75×) | 200 µs (1.00×) | 100 µs (0.50×) | 120 µs (0.60×) | — |",
		"| client CPU per uncontended lock+unlock (reported) | uncontended, 64 goroutines on keys of their own; getrusage of the client process over the case | — | — | — | — | — | — |",
		"### 8 contenders sharing one client, 0 ms of work inside",
		"### 8 contenders with a client each, 1 ms of work inside",
		"| redsync v4 (go-redis v9) | 2,000 | 1.00× | 10 | 1.00× | 120 µs / 2.00 ms | — | 1.00 ms / 5.00 ms | 20.0 ms | ∞ (2 starved) | 0 |",
		"| redlock+goredis | 2,000 | 1.00× | 100 | 10.0× | 2.00 ms / 12.0 ms | — | 1.00 ms / 5.00 ms | 20.0 ms | 1.20 | 0 |",
		"| hand-off p50 ≤ 1 ms | hot key, 8 contenders with a client each, 0 ms of work | 120 µs | 2.00 ms MISS | 2.00 ms MISS | 2.00 ms MISS | 2.00 ms MISS | **MISS** |",
		"## 3. Fairness",
		"The library has no fairness mode yet",
		"| redlock+rueidis | 500 | 400 | — | — | 0 | 500 | 800 | 1.60 | 0 |",
		"| redsync v4 (go-redis v9) | 500 | 400 | — | — | 0 | 0 | 900 | ∞ (1 starved) | 0 |",
		"`hotkey/per-contender/cN-wWORK/LIB`",
		"| redlock+rueidis | 300 µs / 1.00 ms | 1.00× | 250 µs / 1.00 ms | 1.00× | 1000 | 0 |",
		"| redlock+goredis | 100 | 6,000 | 0.70× | 0 |",
		"| 5 | 60,000 | 600,000 | 0 |",
		"The best uncontended rate above, redlock+rueidis with 64 goroutines, is 40.0 % of it.",
		"### Read lock and semaphore",
		"a permit of a **semaphore** of limit 2 (`Acquire` and `Unlock`; a permit needs 4 of the 5 nodes, `dlm.SemaphoreQuorum`)",
		"| library | lease | goroutines | cycles/s | vs the mutex | client CPU/cycle | server CPU/cycle | allocs/cycle | errors |",
		"| redlock+goredis | read lock: RLock+Unlock | 1 | 2,700 | 0.90× | — | — | 105 | 0 |",
		"| redlock+rueidis | semaphore L=2: Acquire+Unlock | 1 | 3,000 | 0.50× | 200 µs | 300 µs | 110.5 | 1 (first: dlm: boom) |",
		"| redlock+redigo | read lock: RLock+Unlock | 64 | — | — | — | — | — | — |",
		"`read/gN/LIB`, `semaphore/gN/LIB`",
		"`allocs-read/LIB` and `allocs-semaphore/LIB`",
		"make bench",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "Partial run") {
		t.Error("a full run is reported as partial")
	}
	r := sampleResults()
	withFairMode(r)
	md = Markdown(r)
	for _, want := range []string{
		"redlock+BACKEND fair adds `dlm.WithFairness(dlm.Fairness{})`",
		"redlock+BACKEND fair is redlock with `dlm.WithFairness(dlm.Fairness{})`:",
		"Nor does redlock+BACKEND fair, where each caller takes its own place",
		"| redlock+goredis fair | 120 | 0.0 | — | — | 0 | 500 | 700 | 1.40 | 0 |",
		"| redlock+goredis fair | — | — | — | — | — | — | — | — | — | — |", // not in the hot-key cases
		"LIB one of goredis, redigo, rueidis, valkey, goredis-fair, rueidis-fair, redsync;",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report with a fair mode lacks %q", want)
		}
	}
	if strings.Contains(md, "no fairness mode yet") {
		t.Error("report with a fair mode says the library has none")
	}
	if strings.Contains(md, "WithNodeTimeout") || strings.Contains(md, "WithTimeoutFactor") {
		t.Error("report without a node timeout names one")
	}
	r = sampleResults()
	r.Config.NodeTimeout = r.Config.TTL / 4
	md = Markdown(r)
	for _, want := range []string{"`dlm.WithTTL(8s)`, `dlm.WithNodeTimeout(2s)`, defaults otherwise", "(enough to keep retrying for the longest case at its shortest delay), `WithTimeoutFactor(0.25)`, defaults otherwise"} {
		if !strings.Contains(md, want) {
			t.Errorf("report with a node timeout lacks %q", want)
		}
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

func TestWriteReportKeepsProfiles(t *testing.T) {
	dir := t.TempDir()
	r := sampleResults()
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, MarkdownFile)
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(first), profilesBegin) {
		t.Fatal("a first report has a profiles section; want none")
	}
	section := profilesBegin + "\n## 7. Profiles\n\nframes by hand\n" + profilesEnd
	edited := strings.Replace(string(first), "## How to rerun", section+"\n\n## How to rerun", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != edited {
		t.Errorf("rewritten report:\n%s\nwant the profiles section kept before How to rerun:\n%s", again, edited)
	}
}

func TestWriteReportKeepsHandWrittenSections(t *testing.T) {
	dir := t.TempDir()
	r := sampleResults()
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, MarkdownFile)
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	profiles := profilesBegin + "\n## 7. Profiles\n\nframes by hand\n" + profilesEnd
	cluster := clusterBegin + "\n## 8. A cluster node\n\nlocks/s by hand\n" + clusterEnd
	edited := strings.Replace(string(first), "## How to rerun", profiles+"\n\n"+cluster+"\n\n## How to rerun", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != edited {
		t.Errorf("rewritten report:\n%s\nwant both hand-written sections kept before How to rerun:\n%s", again, edited)
	}
}
