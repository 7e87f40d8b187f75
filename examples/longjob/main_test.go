package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/internal/leakcheck"
)

// runMainEnv makes the test binary run main instead of the tests, so that
// TestExitStatus sees the exit status of the real program.
const runMainEnv = "LONGJOB_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// runLongjob runs the program as `go run ./examples/longjob ARGS` does and
// returns its exit status and output. It checks that no goroutine outlives
// the run.
func runLongjob(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	leaks := leakcheck.Take()
	var out, errOut bytes.Buffer
	code = run(context.Background(), &out, &errOut, args)
	leaks.Check(t, 5*time.Second)
	t.Logf("longjob %q: exit status %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// TestJobRunsToItsEnd runs the default mode: the job, four TTLs long, runs
// to its end because Do extends the lock, and worker B gets the lock only
// after the job.
func TestJobRunsToItsEnd(t *testing.T) {
	t.Parallel()
	code, out, _ := runLongjob(t)
	if code != exitOK {
		t.Fatalf("exit status %d; want %d", code, exitOK)
	}
	// Without extensions the lock would be gone after one TTL: the job
	// needs at least one extension per TTL after the first.
	if n, want := strings.Count(out, "lock extended by Do"), int(jobTime/lockTTL)-1; n < want {
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
	if !strings.Contains(out, "ok: the job ran 8s under a lock with a TTL of 2s") {
		t.Error(`the output lacks the "ok:" verdict`)
	}
}

// TestLoseStopsJob runs with -lose: the nodes are wiped after step 3, the
// job's context is cancelled on the next extension, and the program exits
// with status 3.
func TestLoseStopsJob(t *testing.T) {
	t.Parallel()
	code, out, errOut := runLongjob(t, "-lose")
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
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"-lose"}, exitLockLost},
		{[]string{"stray"}, exitUsage},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		cmd := exec.CommandContext(ctx, os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tc.want {
			t.Errorf("longjob %q: %v; want exit status %d\n%s", tc.args, err, tc.want, out)
		}
	}
}
