package goredis

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestCloseWaitsForAbandonedCalls checks that no goroutine of a call given up
// on outlives the Close of a node that owns its client.
func TestCloseWaitsForAbandonedCalls(t *testing.T) {
	s := redistest.StartServer(t)
	// The read timeout outlasts the test: the calls' goroutines wait on
	// the paused server until Close.
	n, err := dlm.OpenNode("redis+goredis://" + s.Addr() + "?read_timeout=1m")
	if err != nil {
		t.Fatal(err)
	}
	late := lateBound(t, s)
	s.Pause()
	defer s.Resume()
	for i := 0; i < 4; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		if _, err := n.Eval(ctx, driver.NewScript(echo), nil, []string{"x"}); !errors.Is(err, context.Canceled) {
			t.Errorf("Eval on a paused server, cancelled = %v; want context.Canceled", err)
		}
	}
	if !callsRunning() {
		t.Fatal("no call goroutine runs after the cancelled calls; the test checks nothing")
	}
	closed := time.Now()
	if err := n.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Close waits for the calls' work; a goroutine may still be on its way
	// out of its last frame, which must take no more than a step of this
	// run's pace. One still there after that may be slow or stuck: the
	// wait is doubled (inconclusive) before it fails.
	bound := late
	for i := 0; callsRunning(); time.Sleep(5 * time.Millisecond) {
		if time.Since(closed) <= bound {
			continue
		}
		if i++; i == widenTries {
			t.Fatalf("a call's goroutine is still running %v after Close", time.Since(closed))
		}
		t.Logf("inconclusive: a call's goroutine is still running %v after Close; waiting up to %v", time.Since(closed), 2*bound)
		bound *= 2
	}
	t.Logf("no call goroutine %v after Close", time.Since(closed))
}

// callsRunning reports whether a goroutine that node.wait started (the
// kit's Gate.Go) is running.
func callsRunning() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte("adapterkit.(*Gate).Go.func"))
		}
		buf = make([]byte, 2*len(buf))
	}
}
