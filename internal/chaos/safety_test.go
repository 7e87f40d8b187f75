package chaos

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	safetyTrials = flag.Int("safety.trials", 2, "trials of each cell the docs call safe; make safety sets 200 (the documented limits run a tenth, at least one)")
	safetyOut    = flag.String("safety.out", "", "file to write the matrix to as Markdown (make safety: docs/safety.md)")
	safetyCells  = flag.String("safety.cells", "", "regular expression: run only the cells whose id matches")
)

// verdict is what the docs say of a cell.
type verdict int

const (
	// documentedLimit cells must reproduce the failure: two holders at
	// once, or a stale write accepted.
	documentedLimit verdict = iota
	// safeResource cells must show no stale write accepted.
	safeResource
	// safeLock cells must show neither a stale write accepted nor two
	// holders at once.
	safeLock
	// unclaimed cells are measured and shown, not checked: the docs claim
	// neither way.
	unclaimed
)

// safetyCell is one cell of the matrix: a scenario under a configuration.
type safetyCell struct {
	id       string // the anchor in docs/safety.md
	scenario string
	config   string
	modelled bool
	want     verdict
	workers  int // parallel runs, each with its own servers, sharing the trials
	run      func(t *testing.T, trials int) tally
}

// safetyCells is the matrix.
var safetyMatrix = []safetyCell{
	{id: "pause-plain", scenario: "1. holder process paused (SIGSTOP) past its validity, then writes", config: "plain lock", want: documentedLimit,
		run: func(t *testing.T, n int) tally { return pauseHolder(t, n, false, false) }},
	{id: "pause-fencing", scenario: "1. holder process paused (SIGSTOP) past its validity, then writes", config: "WithFencing + Fence", want: safeResource,
		run: func(t *testing.T, n int) tally { return pauseHolder(t, n, true, false) }},
	{id: "clock-plain", scenario: "2. clock jump forward on one node while the holder's third node is cut off", config: "plain lock", modelled: true, want: documentedLimit,
		run: func(t *testing.T, n int) tally { return clockJump(t, n, false) }},
	{id: "clock-fencing", scenario: "2. clock jump forward on one node while the holder's third node is cut off", config: "WithFencing + Fence", modelled: true, want: safeResource,
		run: func(t *testing.T, n int) tally { return clockJump(t, n, true) }},
	{id: "restart-plain", scenario: "3. node killed (kill -9) and restarted at once without its data", config: "plain lock, no persistence", want: documentedLimit,
		run: func(t *testing.T, n int) tally { return restartEmpty(t, n, restartConfig{}) }},
	{id: "restart-fencing", scenario: "3. node killed (kill -9) and restarted at once without its data", config: "WithFencing + Fence, no persistence", want: documentedLimit,
		run: func(t *testing.T, n int) tally { return restartEmpty(t, n, restartConfig{fenced: true}) }},
	{id: "restart-guard", scenario: "3. node killed (kill -9) and restarted at once without its data", config: "WithRestartGuard, no persistence", want: safeLock, workers: 3,
		run: func(t *testing.T, n int) tally { return restartEmpty(t, n, restartConfig{guard: true}) }},
	{id: "restart-everysec", scenario: "3. node killed (kill -9) and restarted at once with its AOF", config: "appendfsync everysec", want: unclaimed,
		run: func(t *testing.T, n int) tally { return restartEmpty(t, n, restartConfig{appendfsync: "everysec"}) }},
	{id: "restart-always", scenario: "3. node killed (kill -9) and restarted at once with its AOF", config: "appendfsync always", want: safeLock,
		run: func(t *testing.T, n int) tally { return restartEmpty(t, n, restartConfig{appendfsync: "always"}) }},
	{id: "restart-always-fencing", scenario: "3. node killed (kill -9) and restarted at once with its AOF", config: "WithFencing + Fence, appendfsync always", want: safeLock,
		run: func(t *testing.T, n int) tally {
			return restartEmpty(t, n, restartConfig{appendfsync: "always", fenced: true})
		}},
	{id: "delay-toy", scenario: "4. replies to the acquire delayed past the TTL", config: "control: a Redlock without the validity check", want: documentedLimit,
		run: func(t *testing.T, n int) tally { return delayedReplies(t, n, false, true) }},
	{id: "delay-plain", scenario: "4. replies to the acquire delayed past the validity", config: "plain lock", want: safeLock,
		run: func(t *testing.T, n int) tally { return delayedReplies(t, n, false, false) }},
	{id: "delay-fencing", scenario: "4. replies to the acquire delayed past the validity", config: "WithFencing + Fence", want: safeLock,
		run: func(t *testing.T, n int) tally { return delayedReplies(t, n, true, false) }},
	{id: "failover-plain", scenario: "5. Sentinel failover to a replica that had not synced the grant", config: "plain lock", want: documentedLimit,
		run: func(t *testing.T, n int) tally { return failover(t, n, false) }},
	{id: "failover-replica-ack", scenario: "5. Sentinel failover after the grant", config: "WithReplicaAck(1)", want: safeLock, workers: 8,
		run: func(t *testing.T, n int) tally { return failover(t, n, true) }},
	{id: "autoextend-plain", scenario: "6. holder process paused (SIGSTOP) while auto-extension runs, then writes", config: "plain lock, WithAutoExtend", want: documentedLimit,
		run: func(t *testing.T, n int) tally { return pauseHolder(t, n, false, true) }},
	{id: "autoextend-fencing", scenario: "6. holder process paused (SIGSTOP) while auto-extension runs, then writes", config: "WithFencing + Fence, WithAutoExtend", want: safeResource,
		run: func(t *testing.T, n int) tally { return pauseHolder(t, n, true, true) }},
}

// cellTrials is how many trials a cell runs: -safety.trials for the safe
// cells, a tenth of it (at least one) for the documented limits, which fail
// on every trial by construction.
// limitTrials is how many trials a documented limit's cell runs at most
// until the limit shows: each sets up the race the limit lies in, and a
// busy machine may lose one.
const limitTrials = 5

func cellTrials(c safetyCell) int {
	if c.want == documentedLimit {
		return min(*safetyTrials, max(1, *safetyTrials/10))
	}
	return *safetyTrials
}

// cellResult is a cell's outcome.
type cellResult struct {
	tally
	took time.Duration
}

// TestSafetyMatrix runs every cell of the safety matrix on real
// redis-server processes (a Sentinel group for scenario 5; the holder in a
// process of its own for scenarios 1 and 6), and checks each against the
// docs: a documented limit must reproduce its failure (two holders, or a
// stale write accepted), which proves the harness sees failures; a safe
// cell must show no stale write accepted over its trials (nor two holders,
// where the lock itself is claimed safe). With -safety.out it writes the
// table (docs/safety.md, make safety).
func TestSafetyMatrix(t *testing.T) {
	var re *regexp.Regexp
	if *safetyCells != "" {
		re = regexp.MustCompile(*safetyCells)
	}
	start := time.Now()
	var mu sync.Mutex
	results := map[string]*cellResult{}
	t.Run("cells", func(t *testing.T) {
		for _, c := range safetyMatrix {
			if re != nil && !re.MatchString(c.id) {
				continue
			}
			r := &cellResult{}
			results[c.id] = r
			workers := max(1, min(c.workers, cellTrials(c)))
			for w := range workers {
				n := cellTrials(c) / workers
				if w < cellTrials(c)%workers {
					n++
				}
				name := c.id
				if workers > 1 {
					name = fmt.Sprintf("%s/%d", c.id, w)
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					began := time.Now()
					tl := c.run(t, n)
					// A documented limit is a race the scenario sets up, which
					// a busy machine may lose: trials go on, one at a time,
					// until it shows or limitTrials have run.
					for c.want == documentedLimit && tl.Overlaps == 0 && tl.Stale == 0 && tl.Trials < max(n, limitTrials) {
						tl.merge(c.run(t, 1))
					}
					mu.Lock()
					r.merge(tl)
					r.took = max(r.took, time.Since(began))
					mu.Unlock()
				})
			}
		}
	})
	for _, c := range safetyMatrix {
		r := results[c.id]
		if r == nil {
			continue
		}
		figure(t, "safety: cell=%s trials=%d void=%d overlaps=%d stale_accepted=%d refused=%d took=%v notes=%q",
			c.id, r.Trials, r.Void, r.Overlaps, r.Stale, r.Refused, r.took.Round(time.Second), r.notes())
		switch c.want {
		case documentedLimit:
			if r.Overlaps == 0 && r.Stale == 0 {
				t.Errorf("%s: the documented limit did not show in %d trials: no two holders, no stale write accepted", c.id, r.Trials)
			}
		case safeResource, safeLock:
			if r.Stale > 0 {
				t.Errorf("%s: %d stale writes accepted in %d trials", c.id, r.Stale, r.Trials)
			}
			if c.want == safeLock && r.Overlaps > 0 {
				t.Errorf("%s: two holders at once in %d of %d trials", c.id, r.Overlaps, r.Trials)
			}
		}
		if r.Trials < cellTrials(c) {
			t.Errorf("%s: %d trials; want %d", c.id, r.Trials, cellTrials(c))
		}
	}
	// The table is written whatever the outcome: a safe cell that failed
	// shows as such in its verdict.
	if *safetyOut != "" {
		if err := os.WriteFile(*safetyOut, []byte(safetyMarkdown(results, time.Since(start))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// verdictText is the verdict column, from what the docs say of the cell
// and what its trials showed.
func verdictText(c safetyCell, r *cellResult) string {
	switch c.want {
	case documentedLimit:
		if r.Overlaps == 0 && r.Stale == 0 {
			return "**FAILED: the documented limit did not show**"
		}
		return "reproduces documented limit"
	case safeResource:
		if r.Stale > 0 {
			return "**FAILED: claimed safe, stale writes accepted**"
		}
		return "safe: the resource refuses the stale writes"
	case unclaimed:
		return "not claimed either way: measured"
	}
	if r.Stale > 0 || r.Overlaps > 0 {
		return "**FAILED: claimed safe, two holders**"
	}
	return "safe"
}

// machine describes the machine the matrix ran on.
func machine() string {
	uname, _ := exec.Command("uname", "-srm").Output()
	redis, _ := exec.Command("redis-server", "--version").Output()
	v := strings.Fields(string(redis))
	version := "unknown"
	for _, f := range v {
		if strings.HasPrefix(f, "v=") {
			version = strings.TrimPrefix(f, "v=")
		}
	}
	return fmt.Sprintf("%d CPUs (nproc), %s, redis-server %s, %s", runtime.NumCPU(), strings.TrimSpace(string(uname)), version, runtime.Version())
}

// safetyMarkdown renders docs/safety.md.
func safetyMarkdown(results map[string]*cellResult, took time.Duration) string {
	var b strings.Builder
	b.WriteString(`# The safety matrix

Every known way a Redis lock fails, reproduced on real redis-server processes, and the configuration that holds.
This page is generated: ` + "`make safety`" + ` runs ` + "`TestSafetyMatrix`" + ` in ` + "[internal/chaos](../internal/chaos)" + `
(` + "`safety*_test.go`" + `) and writes it. Do not edit it by hand.

Each trial is one construction of the scenario, on fresh lock keys, against a protected resource that receives
every holder's writes. With fencing, the resource checks each write's token and grant with ` + "`dlm.Fence`" + `;
without, it accepts every write. Per cell:

- **overlaps**: trials in which two holders' validity windows (from the grant to ` + "`Lock.Until`" + `) overlapped;
- **stale accepted**: writes the resource accepted from a grant after a later grant's write had been accepted;
- **refused**: writes the resource refused (` + "`dlm.ErrStaleToken`" + `);
- **void**: trials run again because the machine was too slow for the construction (a validity ended before
  the step that needed it); they count in no other column;
- **modelled**: the fault is modelled, not real (see the scenario).

A documented limit must reproduce its failure, or the run fails: that shows the harness sees failures. A safe
cell must show 0 stale writes accepted (and, where the lock itself is claimed safe, 0 overlaps), or the run fails;
the table is written either way, and a cell that failed says so in its verdict.

`)
	fmt.Fprintf(&b, "Command: `make safety` (`go test -race -run '^TestSafetyMatrix$' -safety.trials=%d -safety.out=...`), %s, %v.  \n",
		*safetyTrials, time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	fmt.Fprintf(&b, "Machine: %s.\n\n", machine())
	b.WriteString("| cell | scenario | configuration | trials | overlaps | stale accepted | refused | void | modelled | verdict | notes |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|---|---|---|\n")
	for _, c := range safetyMatrix {
		r := results[c.id]
		if r == nil {
			continue
		}
		mod := "no"
		if c.modelled {
			mod = "yes"
		}
		fmt.Fprintf(&b, "| <a id=\"%s\"></a>`%s` | %s | %s | %d | %d | %d | %d | %d | %s | %s | %s |\n",
			c.id, c.id, c.scenario, c.config, r.Trials, r.Overlaps, r.Stale, r.Refused, r.Void, mod, verdictText(c, r), r.notes())
	}
	b.WriteString(safetyScenarios)
	return b.String()
}

// safetyScenarios explains the constructions, after the table.
const safetyScenarios = `
## The scenarios

Three nodes (quorum 2) unless said otherwise; node timeout 100 ms; TTLs short so that trials are fast, with
every wait derived from them.

1. **Holder paused past its validity** (TTL 300 ms). The holder is a process of its own (the test binary run
   again). It takes the lock, checks that it may act (its validity has not ended), and is frozen with SIGSTOP
   before its write. Once its validity has ended, a rival takes the lock and writes; the holder is continued
   with SIGCONT and writes. No lease can stop this write; only the resource can refuse it (Kleppmann, 2016).
2. **Clock jump forward on one node** (TTL 1 s), *modelled*. The holder A is granted on nodes 0 and 1 (node 2
   is cut off from A by the proxy). Node 1's clock jumps forward past the key's TTL: Redis expires keys by its
   wall clock, and libfaketime does not run Debian's redis-server, so the jump is modelled by expiring A's key
   on node 1 at that moment (` + "`PEXPIRE key 0`" + ` through an admin connection). B is granted on nodes 1
   and 2 while A's validity runs, and writes; A writes again. Two holders; fencing counters do not expire, so
   B's token is larger and the resource refuses A.
3. **Node restarted at once** (TTL 1 s). A is granted on nodes 0 and 1 (node 2 cut off from A) and has not
   written yet. Node 1 is killed (SIGKILL) and started again at once: empty without persistence, from its AOF
   with it. B tries the lock on every node while A's validity runs; if granted, it writes; then A writes. With
   fencing, the key was first granted twice on nodes 0 and 1 only, so node 2's counter lags: a node that lost
   its counter lets B's token fall below A's, and the resource, which never saw A's token, accepts A's write
   after B's. The restart guard's window equals the TTL; under it, each trial first waits until every node
   has been up for the window plus a second (the guard reads the node's uptime in whole seconds, and counts it
   up to a second after the window). kill -9 ends the process, not the machine; the docs make no claim for
   ` + "`appendfsync everysec`" + ` (Redis may postpone its write while a background fsync runs), so its cell is
   measured, not checked.
4. **Replies delayed** (TTL 200 ms). The proxy holds every reply to A back for 300 ms (A's node timeout is
   1.2 s, so the replies arrive); A's keys have expired on the nodes by the time A learns they were set. B
   takes the lock as soon as it can and writes. The control row is a Redlock of the suite's own that skips the
   validity check and counts the TTL from the replies (` + "`ToyLocker`" + ` with ` + "`NoValidityCheck`" + `).
5. **Failover losing a grant** (TTL 20 s; one node: a master, one replica, one Sentinel, started afresh for
   every trial). A is granted on the master; without ` + "`WithReplicaAck`" + ` the replica's link to the
   master is cut first (through the proxy), so the replica has not synced the grant; with it, the grant counts
   once the replica acknowledged it (` + "`WAIT`" + `). The master is frozen (SIGSTOP) and Sentinel promotes the
   replica (` + "`SENTINEL FAILOVER`" + `). B, through the Sentinel, tries the lock until the new master answers.
6. **Holder paused while auto-extension runs** (TTL 300 ms). As 1, with the holder's lock under
   ` + "`WithAutoExtend`" + `: the extensions cannot run while the process is frozen. When it wakes, its write goes
   out first (the pause fell between its check and its write); the trial then checks that the holder's
   ` + "`Lock.Lost()`" + ` is closed. The resource must refuse the late write.
`
