package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
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
// expires keys only when its clock is moved, which the cluster does.
//
// Its margins come from the TTL, not from a quiet machine: the node timeout
// derived from a short TTL (20 ms from 200 ms) does not survive -race on a
// loaded machine, so the test sets a quarter of the TTL, which the lock's
// validity still covers, and waits for the expiry with Lock, bounded by
// another TTL, instead of one TryLock at a guessed moment.
func TestEmbeddedExpiry(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
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
		t.Fatal(err)
	}
	_, err = m.TryLock(ctx, "left-behind")
	if elapsed := time.Since(start); elapsed >= ttl {
		t.Fatalf("two TryLocks took %v, more than the TTL, each bounded by a quarter of it", elapsed)
	}
	if !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("second TryLock at once: got %v, want ErrNotObtained", err)
	}
	// The keys were set after start and expire a TTL later.
	time.Sleep(time.Until(start.Add(ttl)))
	waitCtx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	l, err := m.Lock(waitCtx, "left-behind")
	if err != nil {
		t.Fatalf("Lock after the TTL: %v (the left-behind lock did not expire within another TTL)", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
