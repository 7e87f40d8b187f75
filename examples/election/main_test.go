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

// TestElection runs the demo on its embedded nodes: three leaders in turn,
// never two at once, each observed; nothing left running.
//
// It runs the demo on a timing taken from the pace of the machine
// (paceTiming). A failed run without two leaders at once — a request or a
// leadership's extension timed out, the observer missed a change — cannot
// tell a slow machine from a broken election: it is inconclusive, and runs
// again with twice the node timeout (the other durations in proportion), up
// to slowRuns runs. Two leaders at once always fails. When the observer
// hears each change, and when a crashed leader's successor takes over, is
// proven on virtual time in package dlm (TestObserveOnClock,
// TestRegainAfterHolderCrash).
func TestElection(t *testing.T) {
	tm := paceTiming(t)
	for run := 1; ; run++ {
		leaks := leakcheck.Take()
		var out bytes.Buffer
		err := runWith(context.Background(), tm, &out, nil)
		leaks.Check(t, 5*time.Second)
		t.Logf("run %d (TTL %v, node timeout %v), output:\n%s", run, tm.ttl, tm.nodeTimeout, out.String())
		if err != nil && !strings.Contains(err.Error(), "two leaders at once") {
			if run == slowRuns {
				t.Fatalf("inconclusive %d times, the last with a node timeout of %v: %v", run, tm.nodeTimeout, err)
			}
			t.Logf("inconclusive: %v; running again with twice the node timeout", err)
			tm = tm.withNodeTimeout(2 * tm.nodeTimeout)
			continue
		}
		if err != nil {
			t.Fatalf("run = %v", err)
		}
		for _, want := range []string{"host-a: leading, term", "observer: leader is host-a", "host-b: crashing without resigning", "ok: three leaders in turn"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the output lacks %q", want)
			}
		}
		return
	}
}

// slowRuns is how many runs TestElection makes at most, each with twice
// the node timeout of the last, before it gives up on a machine too slow.
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
	t.Logf("pace %v: TTL %v, node timeout %v, lead %v", p, tm.ttl, tm.nodeTimeout, tm.leadTime)
	return tm
}
