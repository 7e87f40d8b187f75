package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// noLock is a library for the contender processes of the tests: its Lock
// always returns at once, so its contenders hold "the lock" together.
var noLock = Library{ID: "test-nolock", Name: "no lock at all", Open: func([]string, time.Duration, time.Duration, int) (Locker, error) {
	return &fakeLocker{closed: new(atomic.Int32)}, nil
}}

// TestMain lets the test binary serve as a contender process when a test
// starts it as one, with the tests' libraries besides the run's.
func TestMain(m *testing.M) {
	testLibraries = append(testLibraries, noLock)
	if IsContender() {
		os.Exit(ContenderMain())
	}
	os.Exit(m.Run())
}

// testPool returns a pool of contender processes running this test
// binary, stopped when the test ends.
func testPool(t *testing.T) *procPool {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProcPool([]string{self})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("stopping the contenders: %v", err)
		}
	})
	return p
}

// TestProcsDetectTwoHolders runs three contender processes of a "lock"
// that never excludes anyone, each holding it 2 ms at a time: their merged
// records show two holders at once, and so does the shared marker.
//
// On a busy machine the processes may take their turns one after the
// other, or one may get none, within the run: a run where a process got no
// grant, or where neither the records nor the marker saw an overlap, is
// inconclusive and made again twice as long (300 ms, then 600 ms, 1.2 s).
// Only one of the two seeing an overlap fails the test at once.
func TestProcsDetectTwoHolders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := testPool(t)
	if err := p.openLib(ctx, noLock, 3, openJob{}); err != nil {
		t.Fatal(err)
	}
	marker := runtime.GOOS == "linux"
	for try, window := 1, 300*time.Millisecond; ; try, window = try+1, 2*window {
		round, err := p.run(ctx, "k", 2*time.Millisecond, window)
		if err != nil {
			t.Fatal(err)
		}
		r := analyzeHot([]hotRound{round}, ProcessPerContender, 3, 2*time.Millisecond)
		if r.Errors != 0 {
			t.Fatalf("%d errors (%s); want none", r.Errors, r.FirstError)
		}
		if marker && r.MarkerChecked < r.Grants {
			t.Fatalf("marker checked %d of %d grants; want every grant checked", r.MarkerChecked, r.Grants)
		}
		var why string
		switch {
		case slices.Contains(r.PerClient, 0):
			why = fmt.Sprintf("grants per contender %v: a process got none", r.PerClient)
		case r.Violations == 0 && (!marker || r.MarkerViolations == 0):
			why = fmt.Sprintf("%d grants by 3 processes, no overlap in the records nor on the marker", r.Grants)
		case r.Violations == 0:
			t.Fatalf("merged records of %d grants by 3 processes holding at once: no violation found, but %d on the marker", r.Grants, r.MarkerViolations)
		case marker && r.MarkerViolations == 0:
			t.Fatalf("marker checked %d of %d grants and found no overlap; the merged records found %d", r.MarkerChecked, r.Grants, r.Violations)
		}
		if why == "" {
			t.Logf("%v run: %d grants, %d violations in the records, %d on the marker", window, r.Grants, r.Violations, r.MarkerViolations)
			break
		}
		if try == 3 {
			t.Fatalf("%v run, 3 times inconclusive: %s", window, why)
		}
		t.Logf("inconclusive, %v run: %s; again twice as long", window, why)
	}
	if err := p.closeLib(ctx); err != nil {
		t.Fatal(err)
	}
	// The processes serve another library, or the same again, after a close.
	if err := p.openLib(ctx, noLock, 2, openJob{}); err != nil {
		t.Fatalf("opening again: %v", err)
	}
	if len(p.procs) != 3 || len(p.open) != 2 {
		t.Errorf("%d processes, %d open; want the 3 reused, 2 open", len(p.procs), len(p.open))
	}
}

// TestProcsReportFailure checks that a contender that cannot open its
// library makes openLib fail with the contender's own error.
func TestProcsReportFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := testPool(t)
	err := p.openLib(ctx, Library{ID: "no-such-library"}, 2, openJob{})
	if err == nil || !strings.Contains(err.Error(), `no library "no-such-library"`) {
		t.Fatalf("openLib of an unknown library: %v; want the contender's error naming it", err)
	}
}

func TestDecodeCall(t *testing.T) {
	const window = time.Second
	limit := int64(window + maxCallTime)
	tests := []struct {
		name string
		rec  []int64
		want call
		ok   bool
	}{
		{"granted", []int64{1, 2, 3, 4}, call{client: 7, asked: 1, granted: 2, unlock: 3, release: 4}, true},
		{"never granted", []int64{5, neverGranted, 0, 0}, call{client: 7, asked: 5, granted: never}, true},
		{"release at the limit", []int64{0, 1, 2, limit}, call{client: 7, granted: 1, unlock: 2, release: time.Duration(limit)}, true},
		{"too short", []int64{1, 2, 3}, call{}, false},
		{"too long", []int64{1, 2, 3, 4, 5}, call{}, false},
		{"asked before the start", []int64{-1, 2, 3, 4}, call{}, false},
		{"granted before asked", []int64{3, 2, 3, 4}, call{}, false},
		{"unlocked before granted", []int64{1, 3, 2, 4}, call{}, false},
		{"released before unlocked", []int64{1, 2, 4, 3}, call{}, false},
		{"past the limit", []int64{1, 2, 3, limit + 1}, call{}, false},
		{"asked past the limit", []int64{limit + 1, neverGranted, 0, 0}, call{}, false},
	}
	for _, tt := range tests {
		got, err := decodeCall(tt.rec, 7, window)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%s: decodeCall(%v) = %+v, %v; want %+v, ok %v", tt.name, tt.rec, got, err, tt.want, tt.ok)
		}
	}
}

// fakeContender is a contender whose output is text.
func fakeContender(client int, text string) *contenderProc {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), maxContenderLine)
	return &contenderProc{client: client, out: sc, stderr: &tailBuffer{}}
}

func TestReadRun(t *testing.T) {
	t.Run("calls and done", func(t *testing.T) {
		c := fakeContender(2, `{"k":[0,10,20,30]}
{"k":[30,40,50,60]}
{"k":[60,-1,0,0]}
{"done":{"calls":3,"errors":1,"first_err":"boom","checked":2,"overlaps":0,"late":5}}
{"k":[0,1,2,3]}
`)
		r, err := c.readRun(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		want := []call{
			{client: 2, asked: 0, granted: 10, unlock: 20, release: 30},
			{client: 2, asked: 30, granted: 40, unlock: 50, release: 60},
			{client: 2, asked: 60, granted: never},
		}
		if !slices.Equal(r.calls, want) || r.malformed != 0 {
			t.Errorf("calls %+v, %d malformed; want %+v, none", r.calls, r.malformed, want)
		}
		if d := r.done; d.Errors != 1 || d.FirstErr != "boom" || d.Checked != 2 || d.Late != 5 {
			t.Errorf("done = %+v", d)
		}
	})
	t.Run("malformed lines are counted, not used", func(t *testing.T) {
		c := fakeContender(1, `{"k":[0,10,20,30]}
not json
{"k":[5,4,3,2]}
{}
{"done":{"calls":5}}
`)
		r, err := c.readRun(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// Not JSON, out of order, empty, and one call line missing.
		if len(r.calls) != 1 || r.malformed != 4 || !strings.Contains(r.firstMalformed, "contender 1") {
			t.Errorf("%d calls, %d malformed (first %q); want 1 call, 4 malformed", len(r.calls), r.malformed, r.firstMalformed)
		}
	})
	t.Run("output ends before done", func(t *testing.T) {
		c := fakeContender(3, `{"k":[0,10,20,30]}`+"\n")
		c.stderr.Write([]byte("panic: oops"))
		if _, err := c.readRun(time.Second); err == nil || !strings.Contains(err.Error(), "panic: oops") {
			t.Errorf("readRun = %v; want an error quoting the contender's standard error", err)
		}
	})
	t.Run("fail line", func(t *testing.T) {
		c := fakeContender(0, `{"fail":"open redlock+goredis: refused"}`+"\n")
		if _, err := c.readRun(time.Second); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("readRun = %v; want the contender's failure", err)
		}
	})
}

// TestMergeRuns merges the records of three processes into one run: the
// hand-offs between processes are found on the shared time line, and
// their errors, marker checks and lateness add up.
func TestMergeRuns(t *testing.T) {
	const ms = time.Millisecond
	k := func(client int, asked, granted, unlock, release time.Duration) call {
		return call{client: client, asked: asked, granted: granted, unlock: unlock, release: release}
	}
	runs := []contenderRun{
		{client: 0, calls: []call{k(0, 0, 1*ms, 2*ms, 3*ms), k(0, 3*ms, 10*ms, 11*ms, 12*ms)},
			done: doneMsg{Calls: 2, Checked: 2, Late: 1 * ms}},
		{client: 1, calls: []call{k(1, 0, 4*ms, 5*ms, 6*ms), {client: 1, asked: 6 * ms, granted: never}},
			done: doneMsg{Calls: 2, Checked: 1, Errors: 1, FirstErr: "node timeout", Late: 3 * ms}},
		{client: 2, calls: []call{k(2, 0, 7*ms, 8*ms, 9*ms)}, malformed: 1, firstMalformed: "contender 2: bad",
			done: doneMsg{Calls: 2, Checked: 1, Late: 2 * ms}},
	}
	round := mergeRuns(runs, 20*ms)
	if len(round.calls) != 5 || round.errors != 2 || round.firstErr != "node timeout" {
		t.Errorf("%d calls, %d errors (first %q); want 5, 2 (node timeout)", len(round.calls), round.errors, round.firstErr)
	}
	if round.markerChecked != 4 || round.startLag != 3*ms {
		t.Errorf("marker checked %d, start lag %v; want 4, 3ms", round.markerChecked, round.startLag)
	}
	r := analyzeHot([]hotRound{round}, ProcessPerContender, 3, 0)
	// Grants in order: 0, 1, 2, 0: three hand-offs of 1 ms each.
	if r.Grants != 4 || r.Handoffs != 3 || r.Violations != 0 || r.Censored != 1 {
		t.Errorf("grants %d, hand-offs %d, violations %d, censored %d; want 4, 3, 0, 1", r.Grants, r.Handoffs, r.Violations, r.Censored)
	}
	if want := Summarize([]time.Duration{ms, ms, ms}); r.Handoff != want {
		t.Errorf("Handoff = %+v, want %+v", r.Handoff, want)
	}
	if !slices.Equal(r.PerClient, []int{2, 1, 1}) || r.Fairness != 2 {
		t.Errorf("PerClient %v, max/min %v; want [2 1 1], 2", r.PerClient, r.Fairness)
	}

	// Process 2's grant moved inside process 1's hold: two holders at once
	// across processes.
	runs[2].calls[0] = k(2, 0, 4500*time.Microsecond, 8*ms, 9*ms)
	r = analyzeHot([]hotRound{mergeRuns(runs, 20*ms)}, ProcessPerContender, 3, 0)
	if r.Violations != 1 {
		t.Errorf("violations %d, want 1 for a grant inside another process's hold", r.Violations)
	}
}

func TestHolderMarker(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the marker is tested where make test runs: Linux")
	}
	path, err := createMarker(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Two mappings of the file, as two processes have.
	a, err := openMarker(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	b, err := openMarker(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	if a.hold() {
		t.Fatal("first holder found another")
	}
	if !b.hold() {
		t.Error("second holder through the other mapping found none")
	}
	b.release()
	a.release()
	if b.hold() {
		t.Error("a holder after both released found another")
	}
	a.reset()
	if a.hold() {
		t.Error("a holder after reset found another")
	}
	var none *holderMarker
	if none.hold() || none.checks() {
		t.Error("a nil marker checks")
	}
}

// TestSharedClock maps the shared clock twice in one process, as two
// processes do: both mappings put one reading at the same local instant,
// within their errors.
func TestSharedClock(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Go's monotonic clock is CLOCK_MONOTONIC on Linux")
	}
	a, err := newSharedClock()
	if err != nil {
		t.Fatal(err)
	}
	b, err := newSharedClock()
	if err != nil {
		t.Fatal(err)
	}
	s, err := sharedNow()
	if err != nil {
		t.Fatal(err)
	}
	diff := a.local(s).Sub(b.local(s))
	if diff.Abs() > a.err+b.err {
		t.Errorf("mappings place one reading %v apart; want within their errors, %v and %v", diff, a.err, b.err)
	}
	if got := a.local(a.shared); !got.Equal(a.base) {
		t.Errorf("local(shared at base) = %v, want base %v", got, a.base)
	}
}

// TestRunProcs runs the hot-key cases with a process per contender, very
// briefly, against real servers: for every library, three contender
// processes take turns in two runs, their records
// merge without two holders at once, the servers' commands and CPU time
// are counted, and the report renders the cases.
func TestRunProcs(t *testing.T) {
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
	// A library with no grant in a run this short, and no error but
	// timeouts, may be slow as well as broken: inconclusive, the runs are
	// made again twice as long (400 ms, 800 ms, 1.6 s).
	for try, run := 1, 400*time.Millisecond; ; try, run = try+1, 2*run {
		idle, log := runProcs(ctx, t, c, self, run)
		switch {
		case t.Failed():
			t.Logf("progress log:\n%s", log)
			return
		case len(idle) == 0:
			return
		case try == 3:
			t.Errorf("runs of %v: no grant in any process case for %v", run, idle)
			t.Logf("progress log:\n%s", log)
			return
		}
		t.Logf("inconclusive, runs of %v: no grant in any process case for %v; again twice as long", run, idle)
	}
}

// runProcs runs TestRunProcs' cases with runs of the given length, fails t
// for what is wrong whatever the machine's speed, and returns the
// libraries that got no grant, and the progress log.
func runProcs(ctx context.Context, t *testing.T, c *Cluster, self string, run time.Duration) (idle []string, progress string) {
	t.Helper()
	var log strings.Builder
	cfg := DefaultConfig()
	cfg.Run = regexp.MustCompile(`^hotkey/procs/`)
	cfg.ProcCases, cfg.ProcRun, cfg.HotWarmup = []ProcCase{{Contenders: 3, Runs: 2}}, run, 50*time.Millisecond
	cfg.Works = []time.Duration{0}
	cfg.ContenderCmd = []string{self}
	cfg.Log = &log
	r, err := Run(ctx, cfg, c.Addrs(), c.Servers[0].Version)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	for _, lib := range r.Libraries {
		grants := 0
		for _, w := range cfg.Works {
			h := r.hotOf(lib.ID, ProcessPerContender, 3, w)
			switch {
			case h == nil:
				t.Errorf("%s, %v of work: no result", lib.ID, w)
				continue
			case !onlyTimeouts(h.Errors, h.FirstError) || h.Violations != 0 || h.MarkerViolations != 0:
				t.Errorf("%s, %v of work: errors %d (%s), violations %d, on the marker %d; want none but timeouts",
					lib.ID, w, h.Errors, h.FirstError, h.Violations, h.MarkerViolations)
			case len(h.Runs) != 2 || len(h.PerClient) != 3:
				t.Errorf("%s, %v of work: runs %v, grants per contender %v; want 2 runs, 3 contenders", lib.ID, w, h.Runs, h.PerClient)
			case h.Commands == nil || sumCommands(h.Commands) == 0 || h.ServerCPU <= 0:
				t.Errorf("%s, %v of work: servers' commands %v, CPU %v; want both counted", lib.ID, w, h.Commands, h.ServerCPU)
			case runtime.GOOS == "linux" && h.MarkerChecked < h.Grants:
				t.Errorf("%s, %v of work: %d of %d grants checked on the marker", lib.ID, w, h.MarkerChecked, h.Grants)
			}
			if h != nil {
				grants += h.Grants
			}
		}
		// As in TestRunSmoke, a short run may pass without a grant when
		// the contenders split the votes at its start; not all of them.
		if grants == 0 {
			idle = append(idle, lib.ID)
		}
	}
	if strings.Contains(log.String(), "hotkey/procs: contender") {
		t.Error("a contender process failed on its way out")
	}
	md := Markdown(r)
	for _, want := range []string{"#### 3 contenders, a process each, 0 ms of work inside", "#### No collapse: grants/s of each run"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	return idle, log.String()
}
