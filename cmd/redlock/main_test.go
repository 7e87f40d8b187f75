//go:build unix

package main

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// Timing of the end-to-end tests: generous, for a loaded machine running
// them with -race. No test asserts that anything is fast; these only bound
// how long a broken build takes to fail.
const (
	exitTimeout  = 60 * time.Second // for a redlock process to exit
	eventTimeout = 30 * time.Second // for a file or a log line to appear
	stopTimeout  = 10 * time.Second // from SIGTERM to SIGKILL in cleanup
)

var (
	binDir    string // where go build writes the redlock binary
	buildOnce sync.Once
	binPath   string // the redlock binary the tests run
	buildErr  error
)

func TestMain(m *testing.M) {
	unignoreSignals()
	dir, err := os.MkdirTemp("", "redlock-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binaryEnv names the environment variable that gives the tests a redlock
// binary built beforehand: REDLOCK_TEST_BINARY=/path/to/redlock. It must be
// a build of this checkout's cmd/redlock with the tests' -race setting
// (go build -race -o PATH ./cmd/redlock when the tests run with -race): the
// tests check that it exists, that it is a build of cmd/redlock, and that
// its -race setting matches theirs, and fail at once if not. Unset, the
// tests build the binary themselves with go build, a compiler that then
// competes for the cores with the tests already running.
const binaryEnv = "REDLOCK_TEST_BINARY"

// redlockBinary returns the path of the redlock binary the tests run: the
// one REDLOCK_TEST_BINARY ([binaryEnv]) names, or else one built with go
// build, once for all tests, with -race when the tests have it.
func redlockBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if path := os.Getenv(binaryEnv); path != "" {
			binPath, buildErr = checkPrebuilt(path)
			return
		}
		binPath = filepath.Join(binDir, "redlock")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		// The binary is built from this checkout, through the repository's
		// go.work; make release-check builds it as a user installs it.
		cmd := exec.Command("go", append(args, ".")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// checkPrebuilt checks that path, from REDLOCK_TEST_BINARY, is a build of
// cmd/redlock with the tests' -race setting, and returns its absolute path.
func checkPrebuilt(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %v", binaryEnv, path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%s=%q: no redlock binary there: %v", binaryEnv, path, err)
	}
	info, err := buildinfo.ReadFile(abs)
	if err != nil {
		return "", fmt.Errorf("%s=%q: not a Go binary to test: %v", binaryEnv, path, err)
	}
	if info.Path != "github.com/dlmgo/redlock/cmd/redlock" {
		return "", fmt.Errorf("%s=%q: a build of %q; want one of github.com/dlmgo/redlock/cmd/redlock", binaryEnv, path, info.Path)
	}
	race := false
	for _, s := range info.Settings {
		if s.Key == "-race" {
			race = s.Value == "true"
		}
	}
	if race != raceEnabled {
		return "", fmt.Errorf("%s=%q: built with -race=%v, the tests run with -race=%v: build it with the tests' setting", binaryEnv, path, race, raceEnabled)
	}
	return abs, nil
}

// syncBuffer is a bytes.Buffer safe for a process writing it while a test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// proc is a redlock process started by a test.
type proc struct {
	t      *testing.T
	args   []string
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{} // closed when the process has exited
}

// cleanEnv is the test's environment without REDLOCK_ variables, with the
// race detector set to stop at the first race, and to wait 50ms rather than
// a second for other goroutines to report before a process exits.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDLOCK_") && !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	return append(env, "GORACE=halt_on_error=1 atexit_sleep_ms=50")
}

// startRedlock starts redlock with args and the environment variables env
// ("NAME=value") added to the test's, and ends it in t.Cleanup if it is
// still running: SIGTERM, which it passes on to its command, then SIGKILL.
func startRedlock(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, args: args, done: make(chan struct{})}
	p.start(func() { p.cmd.Env = append(p.cmd.Env, env...) })
	return p
}

// start starts the process, with its command changed by setup, and
// registers its end in t.Cleanup.
func (p *proc) start(setup func()) {
	p.t.Helper()
	p.cmd = exec.Command(redlockBinary(p.t), p.args...)
	p.cmd.Env = cleanEnv()
	if paceServer(p.t) != nil {
		// Before the test's own variables, which win, and its flags.
		p.cmd.Env = append(p.cmd.Env, "REDLOCK_NODE_TIMEOUT="+nodeTimeout(p.t, defaultNodeTimeout).String())
	}
	p.cmd.Dir = p.t.TempDir()
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	dieWithTest(p.cmd)
	setup()
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start redlock %q: %v", p.args, err)
	}
	go func() {
		_ = p.cmd.Wait() // the exit status is in ProcessState
		close(p.done)
	}()
	p.t.Cleanup(p.stop)
}

// stop ends the process if it is still running.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(stopTimeout):
	}
	p.cmd.Process.Kill()
	<-p.done
}

// wait waits for the process to exit and returns its exit code. It fails
// the test if the process does not exit in time, or if the race detector
// found a race in it.
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(exitTimeout):
		p.t.Fatalf("redlock %q still running after %v; stderr:\n%s", p.args, exitTimeout, p.stderr.String())
	}
	if strings.Contains(p.stderr.String(), "WARNING: DATA RACE") {
		p.t.Errorf("redlock %q: the race detector found a race:\n%s", p.args, p.stderr.String())
	}
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		p.t.Fatalf("redlock %q was killed by %v; stderr:\n%s", p.args, ws.Signal(), p.stderr.String())
	}
	return ws.ExitStatus()
}

// expectExit waits for the process and fails the test unless it exits
// with want.
func (p *proc) expectExit(want int) {
	p.t.Helper()
	if got := p.wait(); got != want {
		p.t.Fatalf("redlock %q exited with %d; want %d\nstdout:\n%s\nstderr:\n%s", p.args, got, want, p.stdout.String(), p.stderr.String())
	}
}

// signal sends sig to the redlock process.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%v to redlock %q: %v", sig, p.args, err)
	}
}

// redlockRun runs redlock to its end and returns its exit code, stdout and
// stderr.
func redlockRun(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startRedlock(t, env, args...)
	code = p.wait()
	return code, p.stdout.String(), p.stderr.String()
}

// startServers starts n redis-server processes and returns them with the
// --nodes value naming them, one backend each in turn. The first is the one
// the test's redlock processes measure the machine's pace through
// ([measurePaceThrough]): a test may stop or pause the others, not it.
func startServers(t *testing.T, n int, opts ...redistest.ServerOption) ([]*redistest.Server, string) {
	t.Helper()
	servers := redistest.StartServers(t, n, opts...)
	measurePaceThrough(t, servers[0])
	schemes := []string{"redis+goredis", "redis+redigo", "redis+rueidis"}
	urls := make([]string, n)
	for i, s := range servers {
		urls[i] = schemes[i%len(schemes)] + "://" + s.Addr()
	}
	return servers, strings.Join(urls, ",")
}

// Node timeouts on a loaded machine. A node timeout is the one real-time
// bound whose expiry changes what redlock does (a node that answers late
// counts as down: "nodes unavailable", exit 69, or a lock lost), so no test
// gives redlock a constant one. Each redlock process a test starts on its
// servers gets the node timeout it would derive from its default TTL,
// stretched to the pace of the machine measured right before it starts
// ([redistest.MeasurePace] through the test's first server, then
// [redistest.Pace.Stretch]), as REDLOCK_NODE_TIMEOUT; a test that needs
// another asks [nodeTimeout] for it and passes it as a flag. What such a
// test proves (exit codes, one holder at a time, a loss reported) does not
// depend on the bound; when a lock is lost or a waiter woken, on a node
// timeout's clock, is proven on virtual time in package dlm.

// defaultNodeTimeout is the node timeout redlock derives from its default
// TTL, 10 s: a twentieth of it, at most 250 ms.
const defaultNodeTimeout = 250 * time.Millisecond

// paceServers maps a test's name to the server through which the redlock
// processes it and its subtests start measure the pace of the machine.
var paceServers sync.Map // t.Name() → *redistest.Server

// measurePaceThrough makes s, which must stay up while t runs, the server
// through which the redlock processes t and its subtests start measure the
// machine's pace, and so gives each of them a node timeout stretched to it.
func measurePaceThrough(t *testing.T, s *redistest.Server) {
	t.Helper()
	paceServers.Store(t.Name(), s)
	t.Cleanup(func() { paceServers.CompareAndDelete(t.Name(), s) })
}

// paceServer returns the server measurePaceThrough named for t or the
// nearest test above it, or nil if there is none.
func paceServer(t *testing.T) *redistest.Server {
	for name := t.Name(); ; {
		if s, ok := paceServers.Load(name); ok {
			return s.(*redistest.Server)
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return nil
		}
		name = name[:i]
	}
}

// measurePace measures the machine's pace now, through the test's server
// (see measurePaceThrough), and logs it.
func measurePace(t *testing.T) redistest.Pace {
	t.Helper()
	s := paceServer(t)
	if s == nil {
		t.Fatal("no server to measure the pace through: start the test's servers with startServers, or name one with measurePaceThrough")
	}
	p := redistest.MeasurePace(t, s)
	t.Logf("pace %v", p)
	return p
}

// nodeTimeout returns d, a node timeout that suffices on a quiet machine,
// stretched to the pace of the machine measured now ([redistest.Pace.Stretch]).
func nodeTimeout(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	nt := measurePace(t).Stretch(d)
	t.Logf("node timeout %v (at least %v)", nt, d)
	return nt
}

// waitFor polls until cond holds, and fails the test if it does not within
// eventTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", eventTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fileHas reports whether the file at path contains s.
func fileHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}

// readFile returns the content of the file at path, or "" if there is none.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// flush empties the servers, as a node restarted without persistence
// would be.
func flush(t *testing.T, servers ...*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		if _, err := s.Do("FLUSHALL"); err != nil {
			t.Fatalf("FLUSHALL on %s: %v", s.Addr(), err)
		}
	}
}

// boundedWait is a shell loop that waits until the file $1 exists, for at
// most a minute, so that no command outlives a failed test for long.
const boundedWait = `i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`

// sh returns the arguments that run script with sh, with args as $1....
func sh(script string, args ...string) []string {
	return append([]string{"sh", "-c", script, "sh"}, args...)
}

// exists reports whether a file exists at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// touch creates an empty file at path.
func touch(t *testing.T, path string) {
	t.Helper()
	writeFile(t, path, "")
}

// writeFile writes content to a file at path, not executable.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// forwarded are the signals the tests send redlock to pass on.
var forwarded = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM}

// unignoreSignals makes the redlock processes the tests start begin with
// the default disposition of every signal they forward, as from a
// terminal. A test run under nohup, or as a background job of a
// non-interactive shell (SIGINT and SIGQUIT ignored), would otherwise pass
// its ignored signals on through exec, and redlock, rightly, forwards no
// signal its caller ignores. A signal caught here is reset to the default
// in a child at exec; this process goes on ignoring it, as before, since
// nothing reads the channel.
func unignoreSignals() {
	for _, sig := range forwarded {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
}
