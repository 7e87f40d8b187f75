package goredis

import (
	"context"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// echo is a script that returns its first argument.
const echo = "return ARGV[1]"

// slack is how much later than its context a call may return on a quiet
// machine; [lateBound] stretches it to the pace of the run.
const slack = 500 * time.Millisecond

// lateBound returns how much later than its context a call to s may return
// on this run: slack, or the slack of the pace measured through s now where
// that is more. s must be up.
func lateBound(t *testing.T, s *redistest.Server) time.Duration {
	t.Helper()
	p := redistest.MeasurePace(t, s)
	d := p.Stretch(slack)
	t.Logf("pace %v: a call may return up to %v after its context", p, d)
	return d
}

// widenTries is how many times [widening] runs a check that cannot tell a
// slow machine from a broken node.
const widenTries = 3

// widening runs check with its bounds scaled by 1, 2, 4, ... until its
// outcome is conclusive ([redistest.Widen]).
func widening(t *testing.T, check func(t *testing.T, scale time.Duration) (inconclusive string)) {
	t.Helper()
	redistest.Widen(t, widenTries, func(scale time.Duration) string { return check(t, scale) })
}

// openNode opens url through the registry and closes the node when the test
// ends.
func openNode(t *testing.T, url string) driver.Node {
	t.Helper()
	n, err := dlm.OpenNode(url)
	if err != nil {
		t.Fatalf("OpenNode(%q): %v", url, err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

// eval runs src on n with a 5-second deadline.
func eval(n driver.Node, src string, keys, args []string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return n.Eval(ctx, driver.NewScript(src), keys, args)
}
