package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupMembers returns the processes of ps in process group pgrp that have
// not exited.
func groupMembers(ps []procStat, pgrp int) []procStat {
	var out []procStat
	for _, s := range ps {
		if s.pgrp == pgrp && !s.zombie() {
			out = append(out, s)
		}
	}
	return out
}

// describe lists processes for a test's message.
func describe(ps []procStat) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "pid %d (state %c, parent %d)", p.pid, p.state, p.ppid)
	}
	return b.String()
}

// TestKillRedlockKillsCommandGroup kills redlock with SIGKILL while its
// command, a shell, waits for a process it started in the background, and
// checks that no process of the command's group outlives the lock's TTL,
// and that a second redlock, started at once, runs its command only once
// they are all gone: its command takes a snapshot of /proc as it starts.
// In the foreground of a terminal the command shares redlock's process
// group; redlock is then the session's leader, whose death sends SIGHUP to
// that group, and the command ignores SIGHUP, as nohup would have it.
func TestKillRedlockKillsCommandGroup(t *testing.T) {
	t.Parallel()
	runArgs := func(nodes string, ttl time.Duration, command []string) []string {
		return runArgs("job", command, "--nodes", nodes, "--ttl", ttl.String())
	}
	for _, tc := range []struct {
		name     string
		args     func(nodes string, ttl time.Duration, command []string) []string
		terminal bool // redlock runs in the foreground of a terminal
	}{
		{"run", runArgs, false},
		{"elect", func(nodes string, ttl time.Duration, command []string) []string {
			return append([]string{"elect", "--nodes", nodes, "--ttl", ttl.String(), "job", "v", "--"}, command...)
		}, false},
		{"run in the foreground of a terminal", runArgs, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, nodes := startServers(t, 3)
			ttl := killTTL(t)
			dir := t.TempDir()
			pidFile, snapshot := filepath.Join(dir, "pids"), filepath.Join(dir, "snapshot")
			args := tc.args(nodes, ttl, sh(`trap "" HUP; sleep 30 & echo $$ $! > "$1.tmp"; mv "$1.tmp" "$1"; wait`, pidFile))
			first := &proc{t: t, args: args, done: make(chan struct{})}
			first.start(func() {
				if tc.terminal {
					_, slave := openPTY(t)
					first.cmd.Stdin = slave
					attr := first.cmd.SysProcAttr
					attr.Setsid, attr.Setctty, attr.Ctty = true, true, 0
				}
			})
			waitFor(t, "the command to start", func() bool { return exists(pidFile) })
			var shPid, sleepPid int
			if _, err := fmt.Sscan(readFile(t, pidFile), &shPid, &sleepPid); err != nil {
				t.Fatalf("the command's pids %q: %v", readFile(t, pidFile), err)
			}
			st, ok := readStat(shPid)
			if !ok {
				t.Fatalf("the command's shell (pid %d) is gone before redlock was killed", shPid)
			}
			group := st.pgrp
			if group == syscall.Getpgrp() {
				t.Fatalf("the command runs in the test's process group %d; want a group of its own", group)
			}
			if shared := group == first.cmd.Process.Pid; shared != tc.terminal {
				t.Fatalf("the command's process group is %d, redlock's pid %d; want it redlock's only in the foreground of a terminal", group, first.cmd.Process.Pid)
			}
			// Whatever the outcome, nothing of the command outlives the test.
			t.Cleanup(func() { syscall.Kill(-group, syscall.SIGKILL) })
			if len(groupMembers(processes(), group)) < 2 {
				t.Fatalf("process group %d holds %s; want the shell and sleep", group, describe(groupMembers(processes(), group)))
			}

			// The process is not waited for: its command's processes hold
			// the pipes of its output, and its end in the test waits for
			// them too.
			if err := first.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			second := startRedlock(t, nil, tc.args(nodes, ttl, sh(`cat /proc/[0-9]*/stat > "$1" 2>/dev/null; exit 0`, snapshot))...)

			// Every process of the group is gone before the lock's TTL
			// has passed since redlock died.
			for {
				left := groupMembers(processes(), group)
				if len(left) == 0 {
					break
				}
				if time.Since(killed) > ttl {
					t.Errorf("%v after redlock was killed, process group %d still holds %s (shell %d, sleep %d); want none",
						ttl, group, describe(left), shPid, sleepPid)
					break
				}
				time.Sleep(20 * time.Millisecond)
			}

			second.expectExit(0)
			var seen []procStat
			for _, line := range bytes.Split([]byte(readFile(t, snapshot)), []byte("\n")) {
				if s, ok := parseStat(line); ok {
					seen = append(seen, s)
				}
			}
			if len(seen) == 0 {
				t.Fatalf("the second command's snapshot of /proc is empty")
			}
			if left := groupMembers(seen, group); len(left) != 0 {
				t.Errorf("when the second command started, process group %d still held %s (shell %d, sleep %d); want none",
					group, describe(left), shPid, sleepPid)
			}
		})
	}
}

// killTTL is the TTL of a lock whose holder is killed: at least 2 s, and
// eight node timeouts at the pace of the machine measured now, so that a
// loaded machine's slow extension does not end the lock before the test
// kills its holder. The processes of its command must be gone within it.
func killTTL(t *testing.T) time.Duration {
	t.Helper()
	ttl := max(2*time.Second, 8*measurePace(t).Stretch(defaultNodeTimeout))
	t.Logf("TTL %v", ttl)
	return ttl
}

// TestKillRedlockKillsDetachedProcesses kills redlock with SIGKILL while
// its command runs a process that left the command's process group and
// session (setsid) and whose parent, a subshell, has exited: the
// supervisor, a child subreaper, still finds it below itself and ends it
// within the lock's TTL.
func TestKillRedlockKillsDetachedProcesses(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	ttl := killTTL(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The background subshell is no group leader, so setsid(1) calls
	// setsid(2) and execs sleep in its own process.
	script := `(setsid sleep 30 & echo $! > "$2.tmp"; mv "$2.tmp" "$2"); ` + boundedWait
	first := startRedlock(t, nil, runArgs("detached", sh(script, pidFile+".never", pidFile), "--nodes", nodes, "--ttl", ttl.String())...)
	waitFor(t, "the detached process to start", func() bool { return exists(pidFile) })
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatalf("the detached process's pid %q: %v", readFile(t, pidFile), err)
	}
	var st procStat
	waitFor(t, "the detached process to be in a session of its own", func() bool {
		s, ok := readStat(pid)
		st = s
		return ok && s.pgrp == pid
	})
	t.Cleanup(func() {
		if s, ok := readStat(pid); ok && s.start == st.start {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		s, ok := readStat(pid)
		if !ok || s.start != st.start || s.zombie() {
			break
		}
		if time.Since(killed) > ttl {
			t.Fatalf("%v after redlock was killed, the detached process %d still runs (state %c, parent %d); want it gone", ttl, pid, s.state, s.ppid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSuperviseRefusesUser checks that the supervisor's command, without
// its link to a redlock, refuses to run a command.
func TestSuperviseRefusesUser(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "ran")
	code, _, stderr := redlockRun(t, nil, append([]string{superviseCommand, modeGroup, "1s", "/bin/sh"}, sh(`touch "$1"`, ran)...)...)
	if code != exitUsage || !strings.Contains(stderr, "redlock's own") || exists(ran) {
		t.Errorf("redlock %s = %d, stderr %q, ran: %v; want %d, a refusal, and nothing run", superviseCommand, code, stderr, exists(ran), exitUsage)
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	tail := " 4 5 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 98765 1024 200 18446744073709551615"
	tests := []struct {
		line string
		want procStat
		ok   bool
	}{
		{"42 (sleep) S 7" + tail, procStat{pid: 42, ppid: 7, pgrp: 4, state: 'S', start: 98765}, true},
		{"43 (a) b (c) Z 1" + tail + "\n", procStat{pid: 43, ppid: 1, pgrp: 4, state: 'Z', start: 98765}, true},
		{"44 (x\ny) R 2" + tail, procStat{pid: 44, ppid: 2, pgrp: 4, state: 'R', start: 98765}, true},
		{"", procStat{}, false},
		{"(sleep) S 7" + tail, procStat{}, false},
		{"-1 (sleep) S 7" + tail, procStat{}, false},
		{"45 (sleep S 7" + tail, procStat{}, false},
		{"46 (sleep) S 7 4 5", procStat{}, false},
		{"47 (sleep) SS 7" + tail, procStat{}, false},
		{"48 (sleep) S x" + tail, procStat{}, false},
		{"49 (sleep) S 7 -4" + strings.TrimPrefix(tail, " 4"), procStat{}, false},
	}
	for _, tt := range tests {
		got, ok := parseStat([]byte(tt.line))
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
	// This process's own line parses, and names it.
	if s, ok := readStat(os.Getpid()); !ok || s.pid != os.Getpid() || s.ppid != os.Getppid() || s.pgrp != syscall.Getpgrp() {
		t.Errorf("readStat(%d) = %+v, %v; want this process, parent %d, group %d", os.Getpid(), s, ok, os.Getppid(), syscall.Getpgrp())
	}
}

func TestDescendants(t *testing.T) {
	t.Parallel()
	ps := []procStat{{pid: 1}, {pid: 10, ppid: 1}, {pid: 11, ppid: 10}, {pid: 12, ppid: 11, state: 'Z'}, {pid: 13, ppid: 1}, {pid: 14, ppid: 13}, {pid: 15, ppid: 10}}
	var got []int
	for _, s := range descendants(ps, 10) {
		got = append(got, s.pid)
	}
	if want := []int{11, 15, 12}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("descendants of 10 = %v; want %v", got, want)
	}
	if got := descendants(ps, 14); len(got) != 0 {
		t.Errorf("descendants of 14 = %v; want none", got)
	}
}
