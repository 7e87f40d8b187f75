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

// TestShared runs the program: the readers share the catalog, the writer
// runs alone and before the late reader, and at most two encoders run at
// once (the program checks these itself and fails otherwise).
//
// It runs the demo on a timing taken from the pace of the machine
// (paceTiming). A failed run that broke no exclusion — a request timed
// out, the first readers did not overlap, the late reader asked before
// the writer was waiting — cannot tell a slow machine from a broken lock:
// it is inconclusive, and runs again with twice the node timeout (the
// other durations in proportion), up to slowRuns runs. A writer with a
// reader, or more encoders than permits, always fails. That a waiting
// writer holds back new readers is package dlm's claim too
// (TestRWLockWriterPreferred, TestWriterIntentAtFirstAttempt).
func TestShared(t *testing.T) {
	tm := paceTiming(t)
	for run := 1; ; run++ {
		leaks := leakcheck.Take()
		var out bytes.Buffer
		err := runWith(context.Background(), tm, &out)
		leaks.Check(t, 5*time.Second)
		t.Logf("run %d (TTL %v, node timeout %v), output:\n%s", run, tm.ttl, tm.nodeTimeout, out.String())
		if err != nil && !brokeExclusion(err) {
			if run == slowRuns {
				t.Fatalf("inconclusive %d times, the last with a node timeout of %v: %v", run, tm.nodeTimeout, err)
			}
			t.Logf("inconclusive: %v; running again with twice the node timeout", err)
			tm = tm.withNodeTimeout(2 * tm.nodeTimeout)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"order: reader", "writer, late reader", "each permit needs 4 of the 5 nodes", "ok: "} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the output lacks %q", want)
			}
		}
		return
	}
}

// brokeExclusion reports whether err, the demo's failure, says that a lock
// let in whom it must keep out: what no slowness of the machine excuses.
func brokeExclusion(err error) bool {
	for _, broken := range []string{"read while the writer wrote", "wrote while readers read", "encoders ran at once under a semaphore"} {
		if strings.Contains(err.Error(), broken) {
			return true
		}
	}
	return false
}

// slowRuns is how many runs TestShared makes at most, each with twice the
// node timeout of the last, before it gives up on a machine too slow.
const slowRuns = 3

// paceTiming returns the demo's timing for a test run now: its node
// timeout stretched to the pace of the machine, measured through a
// redis-server of the test's own ([redistest.MeasurePace],
// [redistest.Pace.Stretch]), the other durations lengthened in proportion.
// The demo's nodes live in the test's process and answer late when the
// machine is loaded.
func paceTiming(t *testing.T) timing {
	t.Helper()
	p := redistest.MeasurePace(t, redistest.StartServer(t))
	tm := demoTiming.withNodeTimeout(p.Stretch(demoTiming.nodeTimeout))
	t.Logf("pace %v: TTL %v, node timeout %v, read %v, encode %v", p, tm.ttl, tm.nodeTimeout, tm.readTime, tm.encodeFor)
	return tm
}
