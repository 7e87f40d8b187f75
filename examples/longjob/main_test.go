package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// runMainEnv makes the test binary run main instead of the tests, so that
// TestExitStatus sees the exit status of the real program; nodeTimeoutEnv
// gives that program the node timeout of the test's timing (paceTiming).
const (
	runMainEnv     = "LONGJOB_RUN_MAIN"
	nodeTimeoutEnv = "LONGJOB_NODE_TIMEOUT"
)

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		if nt, err := time.ParseDuration(os.Getenv(nodeTimeoutEnv)); err == nil {
			demoTiming = demoTiming.withNodeTimeout(nt)
		}
		main()
	}
	os.Exit(m.Run())
}

// paceTiming returns the demo's timing for a test run now: its node
// timeout stretched to the pace of the machine, measured through a
// redis-server of the test's own ([redistest.MeasurePace],
// [redistest.Pace.Stretch]), its TTL and steps lengthened in proportion.
// The demo's nodes live in the test's process, and answer late when the
// machine is loaded: a node timeout tuned on a quiet machine would make
// Do report a healthy lock lost. What the tests prove does not depend on
// it; when Do cancels the job, on a node timeout's clock, is proven on
// virtual time in package dlm (TestDoLockLost, TestAutoExtendQuorumGone).
func paceTiming(t *testing.T) timing {
	t.Helper()
	p := redistest.MeasurePace(t, redistest.StartServer(t))
	tm := demoTiming.withNodeTimeout(p.Stretch(demoTiming.nodeTimeout))
	t.Logf("pace %v: TTL %v, node timeout %v, step %v", p, tm.ttl, tm.nodeTimeout, tm.step)
	return tm
}

// slowRuns is how many runs runPaced makes at most, each with twice the
// node timeout of the last, before it gives up on a machine too slow.
const slowRuns = 3

// runPaced runs the program with args on the timing paceTiming measures,
// and returns its exit status and output. A run in which an extension
// failed because nodes did not answer in time ("nodes unavailable"), before
// -lose wiped them, cannot tell a slow machine from a broken program: it is
// inconclusive, logged as such, and run again with twice the node timeout
// (its TTL and steps in proportion), up to slowRuns runs in all.
func runPaced(t *testing.T, args ...string) (tm timing, code int, stdout, stderr string) {
	t.Helper()
	tm = paceTiming(t)
	for run := 1; ; run++ {
		code, stdout, stderr = runLongjob(t, tm, args...)
		before, _, _ := strings.Cut(stdout, "wiping every node")
		slow := regexp.MustCompile(`extension failed: .*nodes unavailable`).MatchString(before)
		if !slow {
			return tm, code, stdout, stderr
		}
		if run == slowRuns {
			t.Fatalf("inconclusive %d times: extensions timed out on a machine too slow even for a node timeout of %v", run, tm.nodeTimeout)
		}
		t.Logf("inconclusive: an extension timed out (node timeout %v) before any wipe; running again with twice the node timeout", tm.nodeTimeout)
		tm = tm.withNodeTimeout(2 * tm.nodeTimeout)
	}
}

// runLongjob runs the program as `go run ./examples/longjob ARGS` does, on
// the timing tm, and returns its exit status and output. It checks that no
// goroutine outlives the run.
func runLongjob(t *testing.T, tm timing, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	leaks := leakcheck.Scoped() // the tests run in parallel
	var out, errOut bytes.Buffer
	code = runWith(context.Background(), tm, &out, &errOut, args)
	leaks.Check(t, 5*time.Second)
	t.Logf("longjob %q: exit status %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// TestJobRunsToItsEnd runs the default mode: the job, four TTLs long, runs
// to its end because Do extends the lock, and worker B gets the lock only
// after the job.
func TestJobRunsToItsEnd(t *testing.T) {
	t.Parallel()
	tm, code, out, _ := runPaced(t)
	if code != exitOK {
		t.Fatalf("exit status %d; want %d", code, exitOK)
	}
	// Without extensions the lock would be gone after one TTL: the job
	// needs at least one extension per TTL after the first.
	if n, want := strings.Count(out, "lock extended by Do"), int(tm.job()/tm.ttl)-1; n < want {
		t.Errorf("%d extensions logged; want at least %d", n, want)
	}
	done := strings.Index(out, "worker A: job done")
	got := strings.Index(out, "worker B: got the lock")
	if done < 0 || got < 0 {
		t.Fatal("the output lacks the end of the job or worker B's lock")
	}
	if got < done {
		t.Error("worker B got the lock before worker A's job was done")
	}
	refused := regexp.MustCompile(`worker B refused (\d+) time`).FindAllStringSubmatch(out[:done], -1)
	if len(refused) == 0 || refused[len(refused)-1][1] == "0" {
		t.Error("the output does not show worker B refused while the job ran")
	}
	for _, bad := range []string{"job stopped", "lock lost", "wiping"} {
		if strings.Contains(out, bad) {
			t.Errorf("the output shows %q in a run without -lose", bad)
		}
	}
	if want := fmt.Sprintf("ok: the job ran %v under a lock with a TTL of %v", tm.job(), tm.ttl); !strings.Contains(out, want) {
		t.Error(`the output lacks the "ok:" verdict`)
	}
}

// TestLoseStopsJob runs with -lose: the nodes are wiped after step 3, the
// job's context is cancelled (on the next extension, before the end of the
// job: when, exactly, is TestAutoExtendQuorumGone's and TestDoLockLost's
// claim in package dlm, on virtual time), and the program exits with
// status 3.
func TestLoseStopsJob(t *testing.T) {
	t.Parallel()
	_, code, out, errOut := runPaced(t, "-lose")
	if code != exitLockLost {
		t.Fatalf("exit status %d; want %d", code, exitLockLost)
	}
	wiped := strings.Index(out, "wiping every node")
	stopped := strings.Index(out, "worker A: job stopped during step")
	if wiped < 0 || stopped < 0 {
		t.Fatal("the output lacks the wipe or the job stopping")
	}
	if stopped < wiped {
		t.Error("the job stopped before the nodes were wiped")
	}
	for _, want := range []string{"worker A: lock lost:", "the job stopped", "docs/fencing.md"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if strings.Contains(out, "job done") {
		t.Error("the job ran to its end although the lock was lost")
	}
	if !strings.Contains(errOut, "the job did not run to its end under the lock") || !strings.Contains(errOut, "lock lost") {
		t.Errorf("stderr = %q; want it to say the job lost its lock", errOut)
	}
}

// TestBadArgs checks that wrong arguments fail with status 2 before any
// node is started.
func TestBadArgs(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-nosuchflag"}, {"stray"}, {"-lose=maybe"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), &out, &errOut, args); code != exitUsage {
			t.Errorf("run(%q) = %d; want %d", args, code, exitUsage)
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) wrote to stdout: %q", args, out.String())
		}
	}
}

// TestExitStatus runs the program as a process, through main and os.Exit,
// and checks its exit status for -lose and for a bad argument.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	tm := paceTiming(t)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"-lose"}, exitLockLost},
		{[]string{"stray"}, exitUsage},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), tm.deadline())
		cmd := exec.CommandContext(ctx, os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1", nodeTimeoutEnv+"="+tm.nodeTimeout.String())
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tc.want {
			t.Errorf("longjob %q: %v; want exit status %d\n%s", tc.args, err, tc.want, out)
		}
	}
}
