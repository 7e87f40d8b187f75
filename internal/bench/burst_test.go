package bench

import (
	"context"
	"errors"
	"math"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestAnalyzeBurst(t *testing.T) {
	const s = time.Second
	g := func(client int, granted, unlock time.Duration) call {
		return call{client: client, granted: granted, unlock: unlock, release: unlock}
	}
	waiting := call{client: 2, asked: s, granted: never}
	tests := []struct {
		name       string
		calls      []call
		window     time.Duration
		grants     int
		stall      time.Duration
		served     int
		violations int
	}{
		{"no grant: the whole window", []call{waiting}, 10 * s, 0, 10 * s, 0, 0},
		{"from the start to the first grant", []call{g(0, 3*s, 3*s+1), g(1, 4*s, 4*s+1), g(0, 9*s, 9*s+1)}, 10 * s, 3, 5 * s, 2, 0},
		{"from the last grant to the end", []call{g(0, 1*s, 1*s+1), g(1, 2*s, 2*s+1)}, 10 * s, 2, 8 * s, 2, 0},
		{"between two grants", []call{g(0, 1*s, 1*s+1), g(1, 2*s, 2*s+1), g(2, 5*s, 5*s+1), g(0, 9*s, 9*s+1)}, 10 * s, 4, 4 * s, 3, 0},
		{"a grant after the window does not count", []call{g(0, 1*s, 1*s+1), g(1, 10*s, 10*s+1)}, 10 * s, 1, 9 * s, 1, 0},
		{"records out of order", []call{g(1, 6*s, 6*s+1), g(0, 2*s, 2*s+1), waiting}, 8 * s, 2, 4 * s, 2, 0},
		{"a grant before the holder's unlock", []call{g(0, 1*s, 3*s), g(1, 2*s, 4*s), g(2, 5*s, 6*s)}, 6 * s, 3, 3 * s, 3, 1},
	}
	for _, tt := range tests {
		r := analyzeBurst(hotRound{calls: tt.calls, window: tt.window, markerChecked: 7, markerOverlaps: 2}, 4)
		if r.Grants != tt.grants || r.Stall != tt.stall || r.Served != tt.served || r.Violations != tt.violations {
			t.Errorf("%s: grants %d, stall %v, served %d, violations %d; want %d, %v, %d, %d",
				tt.name, r.Grants, r.Stall, r.Served, r.Violations, tt.grants, tt.stall, tt.served, tt.violations)
		}
		if r.Processes != 4 || r.MarkerChecked != 7 || r.Overlaps() != tt.violations+2 || r.MostClients != -1 || r.KeysLeft != -1 {
			t.Errorf("%s: processes %d, checked %d, overlaps %d, most clients %d, keys left %d; want 4, 7, %d, -1, -1",
				tt.name, r.Processes, r.MarkerChecked, r.Overlaps(), r.MostClients, r.KeysLeft, tt.violations+2)
		}
	}
}

func TestBurstRunRatios(t *testing.T) {
	tests := []struct {
		run    BurstRun
		served float64
		conns  float64
	}{
		{BurstRun{Processes: 256, Served: 192, Accepted: []int64{256, 1024, 300}}, 0.75, 4},
		{BurstRun{Processes: 64, Served: 64}, 1, math.NaN()},
		{BurstRun{}, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		served, conns := tt.run.ServedShare(), tt.run.ConnsPerProcess()
		if !sameFloat(served, tt.served) || !sameFloat(conns, tt.conns) {
			t.Errorf("%+v: served %v, connections per process %v; want %v, %v", tt.run, served, conns, tt.served, tt.conns)
		}
	}
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestParseInfoInt(t *testing.T) {
	info := "# Stats\r\ntotal_connections_received:1234\r\nconnected_clients:x7\r\nempty:\r\n"
	tests := []struct {
		field string
		want  int64
		ok    bool
	}{
		{"total_connections_received", 1234, true},
		{"connected_clients", 0, false},
		{"empty", 0, false},
		{"absent", 0, false},
	}
	for _, tt := range tests {
		n, err := parseInfoInt(info, tt.field)
		if n != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseInfoInt(%q) = %d, %v; want %d, ok %v", tt.field, n, err, tt.want, tt.ok)
		}
	}
}

func TestParseScan(t *testing.T) {
	tests := []struct {
		name  string
		reply any
		next  string
		keys  []string
		ok    bool
	}{
		{"a batch", []any{"17", []any{"a", "b"}}, "17", []string{"a", "b"}, true},
		{"the end", []any{"0", []any{}}, "0", []string{}, true},
		{"not an array", "OK", "", nil, false},
		{"one element", []any{"0"}, "", nil, false},
		{"a cursor of the wrong type", []any{int64(0), []any{}}, "", nil, false},
		{"a key of the wrong type", []any{"0", []any{int64(3)}}, "", nil, false},
	}
	for _, tt := range tests {
		next, keys, err := parseScan(tt.reply)
		if (err == nil) != tt.ok || next != tt.next || strings.Join(keys, ",") != strings.Join(tt.keys, ",") {
			t.Errorf("%s: parseScan = %q, %q, %v; want %q, %q, ok %v", tt.name, next, keys, err, tt.next, tt.keys, tt.ok)
		}
		if err != nil && !errors.Is(err, errProtocol) {
			t.Errorf("%s: error %v does not wrap errProtocol", tt.name, err)
		}
	}
}

// TestBurstColdContenders checks the cold-burst protocol on contender
// processes of a lock that never excludes anyone: opened cold, they make
// their calls in a run, report their overlaps, close and open again; a
// cold open of a library they do not know fails at once.
func TestBurstColdContenders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := testPool(t)
	if err := p.openLib(ctx, Library{ID: "no-such-library"}, 1, openJob{Cold: true}); err == nil || !strings.Contains(err.Error(), `no library "no-such-library"`) {
		t.Fatalf("cold openLib of an unknown library: %v; want the contender's error naming it", err)
	}
	p = testPool(t)
	for turn := range 2 {
		if err := p.openLib(ctx, noLock, 2, openJob{Cold: true}); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		round, err := p.run(ctx, "k", time.Millisecond, 200*time.Millisecond)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		r := analyzeBurst(round, 2)
		if r.Grants == 0 || r.Errors != 0 {
			t.Errorf("turn %d: %d grants, %d errors (%s); want grants and no error", turn, r.Grants, r.Errors, r.FirstError)
		}
		if err := p.closeLib(ctx); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
	}
}

// TestNodeProbe checks the probe's counts on a real server: the
// connections others make between two readings, its own left out even
// when it dials again; the clients connected; and the keys of a lock left
// with their longest time to live, other keys left out.
func TestNodeProbe(t *testing.T) {
	bin, err := RedisServerPath("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, bin, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	addr := c.Addrs()[0]
	p := openProbe(ctx, c.Addrs())
	defer p.close()
	before := p.accepted()
	var others []*respConn
	for range 3 {
		o, err := dialRESP(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		others = append(others, o)
	}
	for _, args := range [][]string{
		{"SET", "redlock:{burst/n3/r0/goredis}", "x", "PX", "9000"},
		{"SET", "redlock:{burst/n3/r0/goredis}:line", "x", "PX", "4000"},
		{"SET", "burst/n3/r0/goredis", "x"},
		{"SET", "burst/n3/r1/goredis", "x", "PX", "60000"},
	} {
		if _, err := others[0].do(args...); err != nil {
			t.Fatal(err)
		}
	}
	p.conns[0].Close() // the probe's own connection fails: it dials again
	p.conns[0] = nil
	most := p.mostClients(canceled(), time.Hour)
	after := p.accepted()
	if before == nil || after == nil || after[0]-before[0] != 3 {
		t.Errorf("accepted %v, then %v; want 3 connections between, the probe's own left out", before, after)
	}
	if most != 3 {
		t.Errorf("most clients %d; want the 3 others", most)
	}
	keys, ttl := p.keysLeft("burst/n3/r0/goredis")
	if keys != 3 || ttl <= 4*time.Second || ttl > 9*time.Second {
		t.Errorf("keys left %d, TTL up to %v; want 3, up to 9 s", keys, ttl)
	}
}

// canceled returns a context already ended.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestRunBurst runs the cold-burst case briefly against real servers:
// three processes for each library of the default mode and redsync, one
// short run each; every run is counted on the nodes, without two holders
// at once, and the report renders it. Grants are not asserted: on a busy
// machine a run this short may pass without one.
func TestRunBurst(t *testing.T) {
	bin, err := RedisServerPath("")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, bin, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	var log strings.Builder
	cfg := DefaultConfig()
	cfg.Run = regexp.MustCompile(`^burst/`)
	cfg.Bursts, cfg.BurstRun = []ProcCase{{Contenders: 3, Runs: 1}}, 500*time.Millisecond
	cfg.ContenderCmd, cfg.Log = []string{self}, &log
	r, err := Run(ctx, cfg, c.Addrs(), c.Servers[0].Version)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	var libs []string
	for _, lib := range r.Libraries {
		if !lib.Fair {
			libs = append(libs, lib.ID)
		}
	}
	if len(r.Burst) != len(libs) {
		t.Errorf("%d results, want one for each of %v", len(r.Burst), libs)
	}
	for _, id := range libs {
		b := r.burstOf(id, 3)
		if b == nil || len(b.Runs) != 1 {
			t.Errorf("%s: result %+v; want one run of 3 processes", id, b)
			continue
		}
		run := b.Runs[0]
		switch {
		case run.Overlaps() != 0 || !onlyTimeouts(run.Errors, run.FirstError):
			t.Errorf("%s: overlaps %d, errors %d (%s); want none but timeouts", id, run.Overlaps(), run.Errors, run.FirstError)
		case run.Accepted == nil || run.MostClients < 0 || run.KeysLeft < 0:
			t.Errorf("%s: accepted %v, most clients %d, keys left %d; want every one counted", id, run.Accepted, run.MostClients, run.KeysLeft)
		case runtime.GOOS == "linux" && run.MarkerChecked < run.Grants:
			t.Errorf("%s: %d of %d grants checked on the marker", id, run.MarkerChecked, run.Grants)
		}
	}
	if t.Failed() {
		t.Logf("progress log:\n%s", log.String())
	}
	if md := Markdown(r); !strings.Contains(md, "#### 3 processes at once") {
		t.Error("report lacks the cold-burst table")
	}
}
