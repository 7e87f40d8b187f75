package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// startRedlockInput is startRedlock with input as the process's stdin.
func startRedlockInput(t *testing.T, input string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, args: args, done: make(chan struct{})}
	p.start(func() { p.cmd.Stdin = strings.NewReader(input) })
	return p
}

// TestLsAndForceUnlock checks ls and unlock on real servers, one backend
// per node: ls lists two held locks, one of them named with control
// characters, as a table and as JSON, with those characters escaped in
// both; a PATTERN selects; unlock refuses without --force (64), deletes
// nothing when its question is not answered y (1), and with y deletes the
// lock on every node (0) and logs it, and the holder, whose next extension
// fails, exits 70 having terminated its command; ls then lists the other
// lock alone.
func TestLsAndForceUnlock(t *testing.T) {
	t.Parallel()
	servers, nodes := startServers(t, 3)
	dir := t.TempDir()
	hostile := "evil\x1b]0;pwned\x07\n"
	nt, ttl := lossTimes(t)
	var holders []*proc
	for i, key := range []string{"nightly", hostile} {
		marker := filepath.Join(dir, "m"+string(rune('0'+i)))
		opts := []string{"--nodes", nodes, "--fencing", "--ttl", ttl.String(), "--node-timeout", nt.String(), "--grace", "1s"}
		if i == 0 {
			opts = append(opts, "--owner", "nightly job")
		}
		holders = append(holders, startRedlock(t, nil, runArgs(key, sh(`echo started >> "$1"; exec sleep 60`, marker), opts...)...))
		waitFor(t, "the command to start", func() bool { return fileHas(marker, "started") })
	}
	for _, s := range servers {
		waitFor(t, "the grants on "+s.Addr(), func() bool {
			a, err1 := s.Do("EXISTS", "redlock:{nightly}")
			b, err2 := s.Do("EXISTS", "redlock:{"+hostile+"}")
			return err1 == nil && err2 == nil && a == int64(1) && b == int64(1)
		})
	}

	code, stdout, stderr := redlockRun(t, nil, "ls", "--nodes", nodes)
	if code != exitOK || !strings.Contains(stdout, "nightly job (") || !strings.Contains(stdout, "3/3") || !strings.Contains(stdout, `evil\x1b]0;pwned\a\n`) {
		t.Errorf("redlock ls = %d, stdout:\n%s\nstderr:\n%s\nwant 0, nightly and the escaped key held on 3/3", code, stdout, stderr)
	}
	if strings.ContainsAny(stdout, "\x1b\x07") {
		t.Errorf("redlock ls wrote control characters: %q", stdout)
	}
	code, stdout, stderr = redlockRun(t, nil, "ls", "--json", "--nodes", nodes)
	var rep lsReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitOK {
		t.Fatalf("redlock ls --json = %d, %v; stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if strings.ContainsAny(stdout, "\x1b\x07") {
		t.Errorf("redlock ls --json wrote control characters: %q", stdout)
	}
	if len(rep.Locks) != 2 || rep.Locks[0].Key != hostile || rep.Locks[1].Key != "nightly" || rep.Truncated {
		t.Fatalf("redlock ls --json locks = %+v; want %q and nightly", rep.Locks, hostile)
	}
	for _, l := range rep.Locks {
		if !l.Held || l.HeldOn != 3 || l.TTLMillis <= 0 || l.Fence == 0 || len(l.Nodes) != 3 {
			t.Errorf("redlock ls --json lock %q = %+v; want held on 3 nodes, a TTL and a fence", l.Key, l)
		}
	}
	// The labelled holder's owner, in ls and status; none for the other.
	if o := rep.Locks[1].Owner; o == nil || o.Name != "nightly job" || o.PID <= 0 || o.Host == "" || o.Since == "" || rep.Locks[0].Owner != nil {
		t.Errorf("redlock ls --json owners = %+v, %+v; want nightly job's on nightly alone", rep.Locks[1].Owner, rep.Locks[0].Owner)
	}
	if code, stdout, _ := redlockRun(t, nil, "status", "--nodes", nodes, "nightly"); code != exitOK || strings.Count(stdout, "nightly job (") != 3 || !strings.Contains(stdout, " ago)") {
		t.Errorf("redlock status nightly = %d, stdout:\n%s\nwant the owner and since when on every node", code, stdout)
	}
	if code, stdout, _ := redlockRun(t, nil, "ls", "--nodes", nodes, "night*"); code != exitOK || !strings.Contains(stdout, "nightly") || strings.Contains(stdout, "evil") {
		t.Errorf("redlock ls night* = %d, stdout:\n%s\nwant nightly alone", code, stdout)
	}

	if code, _, stderr := redlockRun(t, nil, "unlock", "--nodes", nodes, "nightly"); code != exitUsage || !strings.Contains(stderr, "--force") {
		t.Errorf("redlock unlock without --force = %d, stderr:\n%s\nwant %d asking for --force", code, stderr, exitUsage)
	}
	for _, answer := range []string{"", "n\n", "maybe\n", strings.Repeat("y", 100) + "\n"} {
		p := startRedlockInput(t, answer, "unlock", "--force", "--nodes", nodes, "nightly")
		if code := p.wait(); code != exitFailure || !strings.Contains(p.stderr.String(), "nothing deleted") || !strings.Contains(p.stdout.String(), "held: yes") {
			t.Errorf("redlock unlock --force answered %q = %d, stdout:\n%s\nstderr:\n%s\nwant %d, the status shown, nothing deleted", answer, code, p.stdout.String(), p.stderr.String(), exitFailure)
		}
	}
	if code, rep := statusJSON(t, nodes, "nightly"); code != exitOK || rep.HeldOn != 3 {
		t.Fatalf("status after unlock was declined = %d, %+v; want held on 3 nodes", code, rep)
	}
	p := startRedlockInput(t, "y\n", "unlock", "--force", "--nodes", nodes, "nightly")
	if code := p.wait(); code != exitOK || !strings.Contains(p.stderr.String(), "force-unlocked") || !strings.Contains(p.stderr.String(), "Break lock") {
		t.Errorf("redlock unlock --force answered y = %d, stderr:\n%s\nwant 0, the question and the log of what it did", code, p.stderr.String())
	}
	holders[0].expectExit(defaultLostCode)
	if !strings.Contains(holders[0].stderr.String(), "lock lost") {
		t.Errorf("holder's stderr:\n%s\nwant it to report the loss", holders[0].stderr.String())
	}
	if code, stdout, _ := redlockRun(t, nil, "ls", "--nodes", nodes); code != exitOK || strings.Contains(stdout, "nightly") || !strings.Contains(stdout, "evil") {
		t.Errorf("redlock ls after unlock = %d, stdout:\n%s\nwant the other lock alone", code, stdout)
	}
	if code, _, stderr := redlockRun(t, nil, "unlock", "--force", "--yes", "--nodes", nodes, "free"); code != exitOK {
		t.Errorf("redlock unlock --force --yes free = %d, stderr:\n%s\nwant 0", code, stderr)
	}
	holders[1].signal(15)
}
