package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// openPTY opens a pseudo-terminal and returns its two ends; both are closed
// in t.Cleanup.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	var n uint32
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("number of the pseudo-terminal: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// startOnTerminal starts redlock with its stderr on a pseudo-terminal, and
// returns it and what it writes there.
func startOnTerminal(t *testing.T, args ...string) (*proc, *syncBuffer) {
	t.Helper()
	master, slave := openPTY(t)
	var screen syncBuffer
	copied := make(chan struct{})
	go func() {
		// Ends with an error once the terminal's last user is gone and
		// the test closed its end.
		io.Copy(&screen, master)
		close(copied)
	}()
	t.Cleanup(func() {
		master.Close()
		<-copied
	})
	p := &proc{t: t, args: args, done: make(chan struct{})}
	p.start(func() { p.cmd.Stderr = slave })
	slave.Close() // redlock holds its own copy
	return p, &screen
}

func TestWaitingLine(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	dir := t.TempDir()
	ready, release := filepath.Join(dir, "ready"), filepath.Join(dir, "release")
	holder := startRedlock(t, nil, runArgs("line", sh(`touch "$2"; `+boundedWait, release, ready), "--nodes", nodes)...)
	waitFor(t, "the holder's command to start", func() bool { return exists(ready) })

	// A node timeout of at least a second, stretched to the pace: an
	// attempt that times out on a loaded machine would end the wait as
	// "nodes unavailable" (69). The wait lets at least one attempt run to
	// its end.
	nt := nodeTimeout(t, time.Second)
	quiet, quietScreen := startOnTerminal(t, runArgs("line", sh("exit 0"), "--nodes", nodes, "--node-timeout", nt.String(), "--wait", (3*nt).String(), "--quiet")...)
	quiet.expectExit(75)

	waiter, screen := startOnTerminal(t, runArgs("line", sh("exit 0"), "--nodes", nodes)...)
	const line = `redlock: waiting for "line" `
	waitFor(t, "the waiting line to show the holder", func() bool {
		return strings.Contains(screen.String(), "held on 3/3 nodes, TTL ")
	})
	touch(t, release)
	holder.expectExit(0)
	waiter.expectExit(0)

	out := screen.String()
	last := strings.LastIndex(out, line)
	if last < 0 {
		t.Fatalf("the terminal shows %q; want a waiting line", out)
	}
	// The line was erased: overwritten with spaces, nothing after.
	drawn := out[last:]
	end := strings.IndexByte(drawn, '\r')
	if end < 0 || drawn[end:] != "\r"+strings.Repeat(" ", end)+"\r" {
		t.Errorf("the terminal ends with %q; want the waiting line erased", drawn)
	}
	if got := quietScreen.String(); got != "" {
		t.Errorf("with --quiet the terminal shows %q; want nothing", got)
	}
}

func TestCommandDiesWithRedlock(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := startRedlock(t, nil, runArgs("orphan", sh(`echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 60`, pidFile), "--nodes", nodes)...)
	waitFor(t, "the command to start", func() bool { return exists(pidFile) })
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	waitFor(t, "the command to die with redlock", func() bool { return !processRunning(pid) })
}

// TestCommandEnvironmentWithoutNodes checks, through the kernel's
// /proc/PID/environ of the command run and elect start, that the command
// does not get REDLOCK_NODES, which holds the nodes' passwords, unless
// --pass-nodes or REDLOCK_PASS_NODES asks for it.
func TestCommandEnvironmentWithoutNodes(t *testing.T) {
	const password = "pw-environ-5d2b"
	servers := redistest.StartServers(t, 3, redistest.WithArgs("--requirepass", password))
	measurePaceThrough(t, servers[0])
	var urls []string
	for _, s := range servers {
		urls = append(urls, "redis+goredis://:"+password+"@"+s.Addr())
	}
	nodes := "REDLOCK_NODES=" + strings.Join(urls, ",")
	out := filepath.Join(t.TempDir(), "environ")
	// The shell reads the environment it was started with, as any
	// process of the same user can.
	readEnviron := sh(`cat /proc/$$/environ > "$1"`, out)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want bool // REDLOCK_NODES in the command's environment
	}{
		{"run", []string{nodes}, runArgs("environ", readEnviron), false},
		{"run --pass-nodes", []string{nodes}, runArgs("environ", readEnviron, "--pass-nodes"), true},
		{"run REDLOCK_PASS_NODES=1", []string{nodes, "REDLOCK_PASS_NODES=1"}, runArgs("environ", readEnviron), true},
		{"elect", []string{nodes}, append([]string{"elect", "environ", "v", "--"}, readEnviron...), false},
		{"elect --pass-nodes", []string{nodes}, append([]string{"elect", "--pass-nodes", "environ", "v", "--"}, readEnviron...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			code, _, stderr := redlockRun(t, tc.env, tc.args...)
			if code != 0 {
				t.Fatalf("redlock %q = %d; want 0; stderr:\n%s", tc.args, code, stderr)
			}
			var got []string
			for _, kv := range strings.Split(readFile(t, out), "\x00") {
				if strings.HasPrefix(kv, "REDLOCK_NODES=") {
					got = append(got, kv)
				}
			}
			switch {
			case !tc.want && len(got) != 0:
				t.Errorf("redlock %q: the command's /proc/PID/environ holds %q; want no REDLOCK_NODES", tc.args, got)
			case tc.want && (len(got) != 1 || got[0] != nodes):
				t.Errorf("redlock %q: the command's /proc/PID/environ holds %q; want %q", tc.args, got, nodes)
			}
			if !strings.Contains(readFile(t, out), "REDLOCK_KEY=environ\x00") {
				t.Errorf("redlock %q: the command's environment lacks REDLOCK_KEY=environ", tc.args)
			}
		})
	}
}
