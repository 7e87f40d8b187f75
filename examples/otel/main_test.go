package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// TestRun runs the example as `go run ./otel` does and checks that it
// succeeds and prints every span and metric name, the dead node's failure,
// and no goroutine outlives it.
//
// It runs the demo on a timing taken from the pace of the machine
// (paceTiming). A failed run in which no lock was granted twice — a
// request timed out, the lost lock's extension did not answer — cannot
// tell a slow machine from a broken hook: it is inconclusive, and runs
// again with twice the node timeouts (the TTL in proportion), up to
// slowRuns runs. When an extension finds a forgotten lock lost is proven on
// virtual time in package dlm (TestAutoExtendQuorumGone, TestDoLockLost).
func TestRun(t *testing.T) {
	tm := paceTiming(t)
	var log string
	for run := 1; ; run++ {
		leaks := leakcheck.Take()
		var out bytes.Buffer
		err := runWith(context.Background(), tm, &out)
		leaks.Check(t, 5*time.Second)
		log = out.String()
		if err == nil {
			break
		}
		// A TryLock that obtained a held lock reports "got <nil>".
		if strings.Contains(err.Error(), "<nil>") || run == slowRuns {
			t.Fatalf("run %d (node timeouts %v, %v): %v\noutput:\n%s", run, tm.nodeTimeout, tm.lostNodeTimeout, err, log)
		}
		t.Logf("inconclusive: %v; running again with twice the node timeouts", err)
		tm = tm.withNodeTimeout(2 * tm.lostNodeTimeout)
	}

	metrics := strings.Index(log, "== metrics")
	if metrics < 0 {
		t.Fatalf("output has no metrics section:\n%s", log)
	}
	spans, tail := log[:metrics], log[metrics:]
	for _, name := range []string{"checkout", "dlm.lock", "dlm.lock.attempt", "dlm.extend", "dlm.unlock", "dlm.do", "dlm.node_error"} {
		if !strings.Contains(spans, `"Name": "`+name+`"`) {
			t.Errorf("spans lack %q", name)
		}
	}
	for _, outcome := range []string{"obtained", "extended", "released", "not_obtained", "lost"} {
		if !strings.Contains(spans, `"Value": "`+outcome+`"`) {
			t.Errorf("spans lack the outcome %q", outcome)
		}
	}
	for _, name := range []string{"dlm.acquire.duration", "dlm.grants", "dlm.contention", "dlm.lost", "dlm.extensions", "dlm.node.errors"} {
		if !strings.Contains(tail, `"Name": "`+name+`"`) {
			t.Errorf("metrics lack %q", name)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", log)
	}
}

// slowRuns is how many runs TestRun makes at most, each with twice the node
// timeouts of the last, before it gives up on a machine too slow.
const slowRuns = 3

// paceTiming returns the demo's timing for a test run now: its shortest
// node timeout stretched to the pace of the machine, measured through a
// redis-server of the test's own ([redistest.MeasurePace],
// [redistest.Pace.Stretch]), the other durations lengthened in proportion.
// The demo's nodes live in the test's process and answer late when the
// machine is loaded.
func paceTiming(t *testing.T) timing {
	t.Helper()
	p := redistest.MeasurePace(t, redistest.StartServer(t))
	tm := demoTiming.withNodeTimeout(p.Stretch(demoTiming.lostNodeTimeout))
	t.Logf("pace %v: node timeout %v; lost lock's TTL %v, node timeout %v", p, tm.nodeTimeout, tm.lostTTL, tm.lostNodeTimeout)
	return tm
}
