//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// The end-to-end tests run the redlock binary against real redis-server
// processes, three nodes each.

// runArgs returns the arguments of "redlock run" for opts, KEY and the
// command.
func runArgs(key string, command []string, opts ...string) []string {
	args := append([]string{"run"}, opts...)
	args = append(args, key, "--")
	return append(args, command...)
}

// statusJSON runs "redlock status --json" and returns its exit code and
// report.
func statusJSON(t *testing.T, nodes, key string) (int, statusReport) {
	t.Helper()
	code, stdout, stderr := redlockRun(t, nil, "status", "--nodes", nodes, "--json", key)
	var rep statusReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("status --json %s: %v; stdout:\n%s\nstderr:\n%s", key, err, stdout, stderr)
	}
	return code, rep
}

func TestRunOneAtATime(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	log := filepath.Join(t.TempDir(), "log")
	const copies = 3
	script := `echo "start $2" >> "$1"; sleep 1; echo "end $2" >> "$1"`
	var ps []*proc
	for i := range copies {
		ps = append(ps, startRedlock(t, nil, runArgs("turns", sh(script, log, strconv.Itoa(i)), "--nodes", nodes)...))
	}
	for _, p := range ps {
		p.expectExit(0)
	}
	// Each start must be followed by the end of the same copy: no copy
	// started while another ran.
	lines := strings.Split(strings.TrimSpace(readFile(t, log)), "\n")
	if len(lines) != 2*copies {
		t.Fatalf("the commands wrote %d lines; want %d:\n%s", len(lines), 2*copies, strings.Join(lines, "\n"))
	}
	seen := map[string]bool{}
	for i := 0; i < len(lines); i += 2 {
		id, ok := strings.CutPrefix(lines[i], "start ")
		if !ok || lines[i+1] != "end "+id || seen[id] {
			t.Fatalf("the commands overlapped or ran twice:\n%s", strings.Join(lines, "\n"))
		}
		seen[id] = true
	}
}

func TestRunWhileHeld(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	dir := t.TempDir()
	ready, release, ran := filepath.Join(dir, "ready"), filepath.Join(dir, "release"), filepath.Join(dir, "ran")
	// The holder writes its fencing token and waits for the release file.
	holder := startRedlock(t, nil, runArgs("report", sh(`echo "$REDLOCK_FENCE" > "$2.tmp"; mv "$2.tmp" "$2"; `+boundedWait, release, ready),
		"--nodes", nodes, "--fencing")...)
	waitFor(t, "the holder's command to start", func() bool { return fileHas(ready, "\n") })
	fence, err := strconv.ParseUint(strings.TrimSpace(readFile(t, ready)), 10, 64)
	if err != nil || fence == 0 {
		t.Fatalf("REDLOCK_FENCE = %q; want a positive token", readFile(t, ready))
	}
	touchRan := sh(`touch "$1"`, ran)

	t.Run("status reports it held", func(t *testing.T) {
		code, rep := statusJSON(t, nodes, "report")
		if code != 0 || !rep.Held || rep.HeldOn != 3 || rep.Failed != 0 || rep.Quorum != 2 || len(rep.Nodes) != 3 {
			t.Fatalf("status --json = %d, %+v; want 0 and held on 3 of 3 nodes, quorum 2", code, rep)
		}
		for _, n := range rep.Nodes {
			if !n.Held || n.TTLMillis <= 0 || n.Fence != fence || n.Error != "" {
				t.Errorf("status --json node %+v; want held, a TTL, fence %d, no error", n, fence)
			}
		}
		code, stdout, _ := redlockRun(t, nil, "status", "--nodes", nodes, "report")
		if code != 0 || !strings.Contains(stdout, `key "report" held: yes (on 3 of 3 nodes, quorum 2)`) {
			t.Errorf("status = %d,\n%s\nwant 0 and the key held", code, stdout)
		}
	})
	t.Run("--no-wait exits with the conflict code", func(t *testing.T) {
		code, _, stderr := redlockRun(t, nil, runArgs("report", touchRan, "--nodes", nodes, "--no-wait")...)
		if code != 75 || !strings.Contains(stderr, "lock held elsewhere") {
			t.Errorf("run --no-wait = %d, stderr:\n%s\nwant 75 and a warning", code, stderr)
		}
		code, _, stderr = redlockRun(t, nil, runArgs("report", touchRan, "--nodes", nodes, "--no-wait", "--conflict-exit-code", "3")...)
		if code != 3 {
			t.Errorf("run --no-wait --conflict-exit-code 3 = %d; want 3; stderr:\n%s", code, stderr)
		}
		code, _, stderr = redlockRun(t, []string{"REDLOCK_NODES=" + nodes, "REDLOCK_NO_WAIT=1", "REDLOCK_QUIET=1"}, runArgs("report", touchRan)...)
		if code != 75 || stderr != "" {
			t.Errorf("run with REDLOCK_NO_WAIT and REDLOCK_QUIET = %d, stderr %q; want 75 and nothing", code, stderr)
		}
	})
	t.Run("--wait runs out", func(t *testing.T) {
		// A node timeout of at least a second, stretched to the pace,
		// keeps a loaded machine's slow reply from reading as "nodes
		// unavailable" (69); the wait lets at least one attempt run to
		// its end. The lock is held throughout: the wait runs out.
		nt := nodeTimeout(t, time.Second)
		wait := 3 * nt
		code, _, stderr := redlockRun(t, nil, runArgs("report", touchRan, "--nodes", nodes, "--node-timeout", nt.String(), "--wait", wait.String())...)
		if code != 75 || !strings.Contains(stderr, "when --wait ran out") {
			t.Errorf("run --wait %v = %d, stderr:\n%s\nwant 75 and a warning", wait, code, stderr)
		}
	})
	t.Run("a signal ends the wait", func(t *testing.T) {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			p := startRedlock(t, nil, runArgs("report", touchRan, "--nodes", nodes, "--log-level", "debug")...)
			waitFor(t, "redlock to try for the lock", func() bool { return strings.Contains(p.stderr.String(), "dlm: lock attempt") })
			p.signal(sig)
			p.expectExit(128 + int(sig))
			if !strings.Contains(p.stderr.String(), "stopped waiting for the lock") {
				t.Errorf("after %v: stderr:\n%s\nwant it to say it stopped waiting", sig, p.stderr.String())
			}
		}
	})
	if exists(ran) {
		t.Errorf("a command ran while another held the lock")
	}

	touch(t, release)
	holder.expectExit(0)

	code, rep := statusJSON(t, nodes, "report")
	if code != 0 || rep.Held || rep.HeldOn != 0 {
		t.Fatalf("status --json after the holder ended = %d, %+v; want 0 and not held", code, rep)
	}
	for _, n := range rep.Nodes {
		if n.Held || n.TTLMillis != 0 || n.Fence != fence {
			t.Errorf("status --json node after release %+v; want not held, fence %d kept", n, fence)
		}
	}
	code, _, stderr := redlockRun(t, nil, runArgs("report", touchRan, "--nodes", nodes, "--no-wait")...)
	if code != 0 || !exists(ran) {
		t.Errorf("run --no-wait once the lock is free = %d (ran: %v); want 0 and the command run; stderr:\n%s", code, exists(ran), stderr)
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	dir := t.TempDir()
	noExec, badFormat, noInterpreter := filepath.Join(dir, "not-executable"), filepath.Join(dir, "bad-format"), filepath.Join(dir, "no-interpreter")
	writeFile(t, noExec, "#!/bin/sh\nexit 0\n")
	// Executable files that execve(2) refuses: found, so only starting
	// them tells.
	writeFile(t, badFormat, "\x00\x01 not a program\n")
	writeFile(t, noInterpreter, "#!/redlock-test-no-such-interpreter\n")
	for _, f := range []string{badFormat, noInterpreter} {
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		command []string
		want    int
	}{
		{"success", sh("exit 0"), 0},
		{"failure", sh("exit 7"), 7},
		{"highest code", sh("exit 255"), 255},
		{"killed by SIGTERM", sh("kill -TERM $$"), 128 + 15},
		{"killed by SIGKILL", sh("kill -KILL $$"), 128 + 9},
		{"not found", []string{"redlock-test-no-such-command"}, 127},
		{"not executable", []string{noExec}, 126},
		{"not a program", []string{badFormat}, 126},
		{"interpreter not found", []string{noInterpreter}, 127},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := redlockRun(t, nil, runArgs("codes", tt.command, "--nodes", nodes)...)
			if code != tt.want {
				t.Errorf("run %q = %d; want %d; stderr:\n%s", tt.command, code, tt.want, stderr)
			}
		})
	}
}

// TestCommandStreams checks that the command reads redlock's stdin and
// writes its stdout and stderr, and that redlock exits with its code.
func TestCommandStreams(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	script := sh(`read line; echo "out $line"; echo "err $line" >&2; exit 3`)
	for _, args := range [][]string{
		runArgs("streams", script, "--nodes", nodes),
		append([]string{"elect", "--nodes", nodes, "streams", "v", "--"}, script...),
	} {
		p := &proc{t: t, args: args, done: make(chan struct{})}
		p.start(func() { p.cmd.Stdin = strings.NewReader("hello\n") })
		p.expectExit(3)
		if got := p.stdout.String(); got != "out hello\n" {
			t.Errorf("redlock %q: stdout %q; want %q", args, got, "out hello\n")
		}
		if got := p.stderr.String(); !strings.Contains(got, "err hello\n") {
			t.Errorf("redlock %q: stderr %q; want the command's %q", args, got, "err hello\n")
		}
	}
}

func TestRunLockLostTerminates(t *testing.T) {
	t.Parallel()
	servers, nodes := startServers(t, 3)
	marker := filepath.Join(t.TempDir(), "marker")
	script := `trap 'echo TERM >> "$1"; exit 0' TERM; echo started >> "$1"; sleep 60; echo finished >> "$1"`
	nt, ttl := lossTimes(t)
	p := startRedlock(t, nil, runArgs("lost", sh(script, marker), "--nodes", nodes, "--ttl", ttl.String(), "--node-timeout", nt.String(), "--grace", "30s")...)
	waitFor(t, "the command to start", func() bool { return fileHas(marker, "started") })
	// The grant returned at a quorum: its request to the slowest node may
	// still be under way, and landing after the flush it would give the
	// lock a majority again. Let it land first.
	for _, s := range servers {
		waitFor(t, "the grant on "+s.Addr(), func() bool {
			v, err := s.Do("EXISTS", "redlock:{lost}")
			return err == nil && v == int64(1)
		})
	}
	// The lock's keys vanish from a majority, as when two nodes restart
	// empty: the next extension finds the lock gone (when: dlm's
	// TestAutoExtendQuorumGone, on virtual time).
	flush(t, servers[0], servers[1])
	p.expectExit(70)
	if got := readFile(t, marker); got != "started\nTERM\n" {
		t.Errorf("the command wrote %q; want it started and terminated by SIGTERM", got)
	}
	if stderr := p.stderr.String(); !strings.Contains(stderr, "lock lost: terminating the command") {
		t.Errorf("stderr:\n%s\nwant it to report the loss", stderr)
	}
}

// lossTimes returns the node timeout and TTL of a test in which a lock is
// lost while its command runs: at least 300 ms, stretched to the pace, and a
// TTL of at least 2 s and seven node timeouts, so that extensions of a
// healthy lock keep it on a loaded machine.
func lossTimes(t *testing.T) (nodeTimeoutArg, ttl time.Duration) {
	t.Helper()
	nt := nodeTimeout(t, 300*time.Millisecond)
	return nt, max(2*time.Second, 7*nt)
}

func TestRunLockLostKills(t *testing.T) {
	t.Parallel()
	servers, nodes := startServers(t, 3)
	dir := t.TempDir()
	marker, pidFile := filepath.Join(dir, "marker"), filepath.Join(dir, "pid")
	// The command ignores SIGTERM.
	script := `trap '' TERM; echo $$ > "$2"; echo started >> "$1"; sleep 60; echo finished >> "$1"`
	nt, ttl := lossTimes(t)
	p := startRedlock(t, nil, runArgs("stalled", sh(script, marker, pidFile),
		"--nodes", nodes, "--ttl", ttl.String(), "--node-timeout", nt.String(), "--grace", "1s", "--lost-exit-code", "71")...)
	waitFor(t, "the command to start", func() bool { return fileHas(marker, "started") })
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatalf("the command's pid: %v", err)
	}
	// A majority stops answering: no extension can succeed, and the lock
	// is lost. When (a loss guard before its validity ends) is proven on
	// virtual time by dlm's TestAutoExtendGivesUp, the lock's Lost, which
	// redlock run waits on. The first server, through which the test
	// measures the pace, stays up.
	for _, s := range servers[1:] {
		s.Pause()
		t.Cleanup(s.Resume)
	}
	p.expectExit(71)
	for _, s := range servers[1:] {
		s.Resume()
	}
	if got := readFile(t, marker); got != "started\n" {
		t.Errorf("the command wrote %q; want it killed before it finished", got)
	}
	stderr := p.stderr.String()
	for _, want := range []string{"lock lost: terminating the command", "still running after the grace period: killing it"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr:\n%s\nwant %q", stderr, want)
		}
	}
	if processRunning(pid) {
		t.Errorf("the command (pid %d) still runs after redlock exited", pid)
	}
}

func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	marker := filepath.Join(t.TempDir(), "marker")
	script := `for s in USR1 USR2 HUP INT QUIT; do trap "echo $s >> $1" $s; done
trap 'echo TERM >> "$1"; exit 3' TERM
echo ready >> "$1"
i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`
	p := startRedlock(t, nil, runArgs("signals", sh(script, marker), "--nodes", nodes)...)
	waitFor(t, "the command to start", func() bool { return fileHas(marker, "ready") })
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT} {
		name := strings.TrimPrefix(signalName(sig), "SIG")
		p.signal(sig)
		waitFor(t, "the command to get "+name, func() bool { return fileHas(marker, name+"\n") })
	}
	p.signal(syscall.SIGTERM)
	p.expectExit(3)
	if got := readFile(t, marker); got != "ready\nUSR1\nUSR2\nHUP\nINT\nQUIT\nTERM\n" {
		t.Errorf("the command got %q; want each signal once, in order", got)
	}
}

func TestRunKeepsIgnoredSignals(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	dir := t.TempDir()
	marker, release := filepath.Join(dir, "marker"), filepath.Join(dir, "release")
	script := `echo ready >> "$2"; ` + boundedWait + `; echo survived >> "$2"`
	args := runArgs("nohup", sh(script, release, marker), "--nodes", nodes)
	// As nohup does, a shell ignores SIGHUP and runs redlock in its place.
	p := &proc{t: t, args: args, done: make(chan struct{})}
	p.start(func() {
		p.cmd.Args = append([]string{"sh", "-c", `trap "" HUP; exec "$0" "$@"`, p.cmd.Path}, args...)
		p.cmd.Path = "/bin/sh"
	})
	waitFor(t, "the command to start", func() bool { return fileHas(marker, "ready") })
	p.signal(syscall.SIGHUP)
	// A SIGHUP wrongly passed on would kill the command; give it the time
	// to land, at least 300 ms stretched to the pace. (Were it slower, the
	// test would pass wrongly, not fail.)
	time.Sleep(measurePace(t).Stretch(300 * time.Millisecond))
	touch(t, release)
	p.expectExit(0)
	if got := readFile(t, marker); got != "ready\nsurvived\n" {
		t.Errorf("the command wrote %q; want it to survive SIGHUP", got)
	}
}

// TestStatusNodeDown checks that status reports a free lock with every node
// answering (exit 0), then a killed node as not answering (exit 69) while
// the others still answer. The node timeout is stretched to the pace of
// the machine (startRedlock): a node that answers late on a loaded machine
// is no node down; a killed one refuses the connection at once.
func TestStatusNodeDown(t *testing.T) {
	t.Parallel()
	servers, nodes := startServers(t, 3)
	code, rep := statusJSON(t, nodes, "never-taken")
	if code != 0 || rep.Held || rep.HeldOn != 0 || rep.Failed != 0 || len(rep.Nodes) != 3 {
		t.Fatalf("status --json of a free lock = %d, %+v; want 0 and not held", code, rep)
	}
	servers[2].Kill()
	code, rep = statusJSON(t, nodes, "never-taken")
	if code != 69 || rep.Failed != 1 || rep.Nodes[2].Error == "" || rep.Nodes[0].Error != "" || rep.Nodes[2].Node != servers[2].Addr() {
		t.Fatalf("status --json with node 3 down = %d, %+v; want 69 and node 3's error", code, rep)
	}
	code, stdout, _ := redlockRun(t, nil, "status", "--nodes", nodes, "never-taken")
	if code != 69 || !strings.Contains(stdout, "1 not answering") || !strings.Contains(stdout, servers[2].Addr()) {
		t.Errorf("status with node 3 down = %d,\n%s\nwant 69 and node 3 not answering", code, stdout)
	}
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	servers, nodes := startServers(t, 3)
	out := filepath.Join(t.TempDir(), "env")
	writeEnv := sh(`echo "$REDLOCK_KEY/$REDLOCK_FENCE" > "$1"`, out)
	env := []string{"REDLOCK_NODES=" + nodes, "REDLOCK_FENCING=true", "REDLOCK_KEY_PREFIX=custom:",
		"REDLOCK_LOG_FORMAT=json", "REDLOCK_LOG_LEVEL=info", "REDLOCK_FENCE=999999"}

	var fences []uint64
	for range 2 {
		code, _, stderr := redlockRun(t, env, runArgs("envkey", writeEnv)...)
		if code != 0 {
			t.Fatalf("run with the nodes from REDLOCK_NODES = %d; want 0; stderr:\n%s", code, stderr)
		}
		key, fence, _ := strings.Cut(strings.TrimSpace(readFile(t, out)), "/")
		n, err := strconv.ParseUint(fence, 10, 64)
		if key != "envkey" || err != nil || n == 0 || n == 999999 {
			t.Fatalf("the command saw REDLOCK_KEY/REDLOCK_FENCE = %q; want envkey and this lock's token", readFile(t, out))
		}
		fences = append(fences, n)
		// REDLOCK_LOG_FORMAT=json, REDLOCK_LOG_LEVEL=info.
		var obtained bool
		for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("stderr line %q is not JSON: %v", line, err)
			}
			obtained = obtained || rec["msg"] == "redlock: lock obtained"
		}
		if !obtained {
			t.Errorf("stderr:\n%s\nwant an info record of the lock obtained", stderr)
		}
	}
	if fences[1] <= fences[0] {
		t.Errorf("fencing tokens of successive runs: %v; want them increasing", fences)
	}
	// REDLOCK_KEY_PREFIX=custom: names the keys on the nodes. The grant
	// raised the counter on a quorum before it was reported; the third
	// node's request may have been cut short when the command exited.
	var raised []string
	for _, s := range servers {
		v, err := s.Do("GET", "custom:{envkey}:fence")
		if err != nil {
			t.Fatalf("GET custom:{envkey}:fence on %s: %v", s.Addr(), err)
		}
		if v == strconv.FormatUint(fences[1], 10) {
			raised = append(raised, s.Addr())
		}
	}
	if len(raised) < 2 {
		t.Errorf("custom:{envkey}:fence = %d on %v; want it on a quorum, 2 or 3 of the nodes", fences[1], raised)
	}

	// Without fencing, an inherited REDLOCK_FENCE is not passed on.
	code, _, stderr := redlockRun(t, append(env, "REDLOCK_FENCING=0"), runArgs("envkey", writeEnv)...)
	if got := strings.TrimSpace(readFile(t, out)); code != 0 || got != "envkey/" {
		t.Errorf("run with REDLOCK_FENCING=0 = %d, the command saw %q; want 0 and no token; stderr:\n%s", code, got, stderr)
	}

	// Flags win over the environment.
	code, _, stderr = redlockRun(t, []string{"REDLOCK_NODES=redis://:pw@127.0.0.1:1", "REDLOCK_TTL=1h"},
		runArgs("envkey", sh("exit 0"), "--nodes", nodes, "--ttl", "5s")...)
	if code != 0 {
		t.Errorf("run with --nodes over a bad REDLOCK_NODES = %d; want 0; stderr:\n%s", code, stderr)
	}

	code, _, stderr = redlockRun(t, []string{"REDLOCK_NODES=" + nodes, "REDLOCK_TTL=soon"}, runArgs("envkey", sh("exit 0"))...)
	if code != 64 || !strings.Contains(stderr, `REDLOCK_TTL="soon"`) {
		t.Errorf("run with REDLOCK_TTL=soon = %d, stderr:\n%s\nwant 64 naming the variable", code, stderr)
	}
}

// TestRunPasswordWithComma checks end to end that a password with commas,
// given in URLs as written or as %2C, reaches the servers whole, from
// --nodes and from REDLOCK_NODES alike; the plain URL given its backend by
// --backend or REDLOCK_BACKEND.
func TestRunPasswordWithComma(t *testing.T) {
	const password = "pa,ss,w0rd"
	servers := redistest.StartServers(t, 3, redistest.WithArgs("--requirepass", password))
	measurePaceThrough(t, servers[0])
	nodes := "redis://:" + password + "@" + servers[0].Addr() +
		",redis+redigo://:pa%2Css%2Cw0rd@" + servers[1].Addr() +
		", redis+rueidis://:" + password + "@" + servers[2].Addr()
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{nil, runArgs("comma", sh("exit 0"), "--nodes", nodes, "--no-wait", "--backend", "goredis")},
		{[]string{"REDLOCK_NODES=" + nodes, "REDLOCK_BACKEND=goredis"}, runArgs("comma", sh("exit 0"), "--no-wait")},
	} {
		code, stdout, stderr := redlockRun(t, tc.env, tc.args...)
		if code != 0 {
			t.Errorf("redlock %q (environment %q) = %d; want 0; stderr:\n%s", tc.args, tc.env, code, stderr)
		}
		if strings.Contains(stdout+stderr, password) || strings.Contains(stdout+stderr, "w0rd") {
			t.Errorf("redlock %q printed the password:\n%s%s", tc.args, stdout, stderr)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	const password = "pw-right-7c1e"
	guarded := redistest.StartServers(t, 3, redistest.WithArgs("--requirepass", password))
	down := redistest.StartServers(t, 3)
	var wrongPW, noPW, downURLs []string
	for i := range 3 {
		wrongPW = append(wrongPW, "redis+goredis://:pw-wrong-93af@"+guarded[i].Addr())
		noPW = append(noPW, "redis+redigo://"+guarded[i].Addr())
		down[i].Kill()
		downURLs = append(downURLs, "redis+rueidis://"+down[i].Addr())
	}
	// A user who may connect but not run scripts: refused at the first
	// request rather than when the node is opened.
	acl := redistest.StartServers(t, 3)
	measurePaceThrough(t, acl[0])
	var limited []string
	for _, s := range acl {
		if _, err := s.Do("ACL", "SETUSER", "limited", "on", ">"+password, "~*", "&*", "+@all", "-@scripting"); err != nil {
			t.Fatalf("ACL SETUSER on %s: %v", s.Addr(), err)
		}
		limited = append(limited, "redis+goredis://limited:"+password+"@"+s.Addr())
	}
	secret := "pw-wrong-93af"
	tests := []struct {
		name string
		env  []string
		args []string
		want int
		says string // in stderr
	}{
		{"no nodes", nil, runArgs("k", sh("exit 0")), 78, "no nodes"},
		{"bad URL", nil, runArgs("k", sh("exit 0"), "--nodes", "redis://:"+secret+"@127.0.0.1:1?nonsense=1"), 78, "unknown parameter"},
		{"unknown backend", nil, runArgs("k", sh("exit 0"), "--nodes", "redis+jedis://127.0.0.1:1"), 78, "unknown driver"},
		{"duplicate nodes", nil, runArgs("k", sh("exit 0"), "--nodes", "127.0.0.1:1,redis://127.0.0.1:1", "--backend", "goredis"), 78, "duplicates"},
		{"wrong password", nil, runArgs("k", sh("exit 0"), "--nodes", strings.Join(wrongPW, ","), "--no-wait"), 78, "WRONGPASS"},
		{"no password", nil, runArgs("k", sh("exit 0"), "--nodes", strings.Join(noPW, ","), "--no-wait"), 78, "NOAUTH"},
		{"status, wrong password", nil, []string{"status", "--nodes", strings.Join(wrongPW, ","), "k"}, 78, "WRONGPASS"},
		{"ACL denies the scripts", nil, runArgs("k", sh("exit 0"), "--nodes", strings.Join(limited, ",")), 78, "refused access"},
		{"ACL denies the scripts, --no-wait", nil, runArgs("k", sh("exit 0"), "--nodes", strings.Join(limited, ","), "--no-wait"), 78, "refused access"},
		{"status, ACL denies the scripts", nil, []string{"status", "--nodes", strings.Join(limited, ","), "k"}, 78, "refused access"},
		{"nodes down", nil, runArgs("k", sh("exit 0"), "--nodes", strings.Join(downURLs, ","), "--no-wait"), 69, "unavailable"},
		{"nodes down until --wait runs out", nil, runArgs("k", sh("exit 0"), "--nodes", strings.Join(downURLs, ","), "--wait", "1s"), 69, "unavailable"},
		{"missing KEY", nil, []string{"run"}, 64, "missing KEY"},
		{"missing COMMAND", nil, []string{"run", "k"}, 64, "missing COMMAND"},
		{"bad flag", nil, []string{"run", "--ttl", "-1s", "k", "true"}, 64, "negative"},
		{"options before the command", nil, []string{"--nodes", "h:1", "run", "k", "true"}, 64, "options follow the command"},
		{"unknown command", nil, []string{"lock", "k"}, 64, "unknown command"},
		{"status with two keys", []string{"REDLOCK_NODES=h:1"}, []string{"status", "k", "j"}, 64, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := redlockRun(t, tt.env, tt.args...)
			if code != tt.want || !strings.Contains(stderr, tt.says) {
				t.Errorf("redlock %q = %d, stderr:\n%s\nwant %d and %q", tt.args, code, stderr, tt.want, tt.says)
			}
			if strings.Contains(stdout+stderr, secret) || strings.Contains(stdout+stderr, password) {
				t.Errorf("redlock %q printed a password:\n%s%s", tt.args, stdout, stderr)
			}
		})
	}
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		want   int
		stdout []string
		stderr string
	}{
		{[]string{"version"}, 0, []string{"redlock ", "go1.", "goredis, redigo, rueidis, valkey"}, ""},
		{[]string{"--version"}, 0, []string{"redlock "}, ""},
		{[]string{"--help"}, 0, []string{"redlock run [OPTIONS] KEY", "redlock status", "Examples:"}, ""},
		{[]string{"help"}, 0, []string{"redlock run [OPTIONS] KEY"}, ""},
		{[]string{"help", "run"}, 0, []string{"--conflict-exit-code CODE", "REDLOCK_NODES", "Exit codes:", "Examples:"}, ""},
		{[]string{"run", "--help"}, 0, []string{"Usage: redlock run", "--lost-exit-code"}, ""},
		{[]string{"status", "-h"}, 0, []string{"Usage: redlock status", "--json", "REDLOCK_JSON"}, ""},
		{[]string{"help", "version"}, 0, []string{"Usage: redlock version"}, ""},
		{[]string{}, 64, nil, "Usage:"},
		{[]string{"help", "lock"}, 64, nil, `no help for "lock"`},
		{[]string{"version", "now"}, 64, nil, "unexpected argument"},
	}
	for _, tt := range tests {
		code, stdout, stderr := redlockRun(t, nil, tt.args...)
		if code != tt.want {
			t.Errorf("redlock %q = %d; want %d; stderr:\n%s", tt.args, code, tt.want, stderr)
		}
		for _, s := range tt.stdout {
			if !strings.Contains(stdout, s) {
				t.Errorf("redlock %q: stdout does not contain %q:\n%s", tt.args, s, stdout)
			}
		}
		if !strings.Contains(stderr, tt.stderr) {
			t.Errorf("redlock %q: stderr does not contain %q:\n%s", tt.args, tt.stderr, stderr)
		}
	}
}
