package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/examples/internal/embedded"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// TestEmbedded runs the quickstart as `go run ./examples/quickstart` does,
// with no flags, and checks that it succeeds, that the workers took turns
// and that the lock outlived a node.
func TestEmbedded(t *testing.T) {
	leaks := leakcheck.Take()
	var out bytes.Buffer
	if err := run(context.Background(), &out, nil); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	// Every server, client and clock goroutine must be gone after run.
	leaks.Check(t, 5*time.Second)
	log := out.String()
	t.Logf("output:\n%s", log)

	workers := map[string]bool{}
	for _, m := range regexp.MustCompile(`worker (\d+) got the lock`).FindAllStringSubmatch(log, -1) {
		workers[m[1]] = true
	}
	if len(workers) < 2 {
		t.Errorf("%d distinct worker(s) got the lock, want at least 2", len(workers))
	}
	kill := strings.Index(log, "killing node 5")
	if kill < 0 {
		t.Fatal("output does not show node 5 being killed")
	}
	// The lock must still be taken after the kill, on 4 of 5 nodes.
	if !strings.Contains(log[kill:], "got the lock") {
		t.Error("no worker got the lock after node 5 was killed")
	}
	for _, want := range []string{
		"errors.Is(err, dlm.ErrNotObtained) = true",
		"errors.Is(err, dlm.ErrUnavailable) = true",
		"ok: ",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestOneWorker runs with one worker, the smallest case.
func TestOneWorker(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), &out, []string{"-workers", "1"}); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "ok: 3 turns by 1 worker,") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestBadArgs checks that wrong flags fail before any node is touched.
func TestBadArgs(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-workers", "0"},
		{"-nodes", " , "},
		{"-nodes", "redis+nosuchdriver://127.0.0.1:1"},
		{"stray"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), &out, args); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

// TestParseNodes checks that URLs naming no backend get one by their
// position, as the embedded nodes do, and the others are left alone.
func TestParseNodes(t *testing.T) {
	t.Parallel()
	got, err := parseNodes("a:1, redis://b:2,rediss://u:p@c:3,redis+redigo://d:4,e")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"redis+goredis://a:1", "redis+redigo://b:2", "rediss+rueidis://u:p@c:3",
		"redis+redigo://d:4", "redis+redigo://e",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("parseNodes = %q, want %q", got, want)
	}
}

// TestEmbeddedExpiry checks that a lock left behind by a holder that never
// unlocks expires on the embedded nodes as on a real Redis: miniredis
// expires keys only when its clock is moved, which the cluster does, on
// the real clock. What it proves, on that clock: a second TryLock while the
// keys live is refused (ErrNotObtained), and a Lock started right after it
// obtains the lock once the keys expire. When a waiter regains a lock left
// behind (not before the keys expire, within the TTL and a backoff) is
// proven on virtual time in package dlm: TestRegainAfterHolderCrash.
//
// The node timeout is a quarter of the TTL, stretched to the pace measured
// on the run ([redistest.Pace.Stretch]). A run that cannot tell a slow
// machine from a broken lock — a request timed out, or the TryLocks were so
// far apart that the keys may have expired between them — is inconclusive
// (expiryRun), and runs again with twice the TTL, up to slowRuns runs.
func TestEmbeddedExpiry(t *testing.T) {
	t.Parallel()
	p := redistest.MeasurePace(t, redistest.StartServer(t))
	ttl := max(2*time.Second, 4*p.Stretch(500*time.Millisecond))
	for run := 1; ; run++ {
		t.Logf("pace %v: TTL %v, node timeout %v", p, ttl, ttl/4)
		why := expiryRun(t, ttl)
		if why == "" {
			return
		}
		if run == slowRuns {
			t.Fatalf("inconclusive %d times, the last with a TTL of %v: %s", run, ttl, why)
		}
		t.Logf("inconclusive: %s; running again with twice the TTL", why)
		ttl *= 2
	}
}

// slowRuns is how many runs TestEmbeddedExpiry makes at most before it
// gives up on a machine too slow.
const slowRuns = 3

// expiryRun is one run of TestEmbeddedExpiry on a cluster of its own, with
// the TTL ttl. It fails t where the lock is broken, and returns why the run
// was inconclusive, or "" when it passed.
func expiryRun(t *testing.T, ttl time.Duration) (inconclusive string) {
	t.Helper()
	c, err := embedded.Start(3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := dlm.Open(withBackends(c.Addrs()), dlm.WithTTL(ttl), dlm.WithNodeTimeout(ttl/4))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	start := time.Now()
	if _, err := m.TryLock(ctx, "left-behind"); err != nil {
		if errors.Is(err, dlm.ErrUnavailable) {
			return fmt.Sprintf("the first TryLock timed out: %v", err)
		}
		t.Fatalf("first TryLock of a free key: %v", err)
	}
	_, err = m.TryLock(ctx, "left-behind")
	// The cluster's clock may jump by as long as its goroutine waited for
	// the CPU, so the keys may expire somewhat before a TTL of real time:
	// half a TTL leaves room for a stall of the other half.
	switch elapsed := time.Since(start); {
	case errors.Is(err, dlm.ErrNotObtained):
	case elapsed >= ttl/2:
		return fmt.Sprintf("the two TryLocks took %v, half the TTL, and the second got %v: the keys may have expired in between", elapsed, err)
	case errors.Is(err, dlm.ErrUnavailable):
		return fmt.Sprintf("the second TryLock timed out: %v", err)
	case err == nil:
		t.Fatalf("second TryLock %v after the first: obtained a lock held for a TTL of %v", elapsed, ttl)
	default:
		t.Fatalf("second TryLock at once: got %v, want ErrNotObtained", err)
	}
	// Lock waits until the keys expire; its context only guards against a
	// hang: keys that never expire.
	waitCtx, cancel := context.WithTimeout(ctx, 3*ttl)
	defer cancel()
	l, err := m.Lock(waitCtx, "left-behind")
	if err != nil {
		t.Fatalf("Lock after the left-behind lock: %v after %v (its keys did not expire within 3 TTLs)", err, time.Since(start))
	}
	t.Logf("the left-behind lock obtained again %v after it was taken (TTL %v)", time.Since(start).Round(time.Millisecond), ttl)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return ""
}
