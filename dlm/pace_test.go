package dlm_test

import (
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// derivedNodeTimeout is the node timeout a manager derives from
// [dlm.DefaultTTL]: a twentieth of it, at most 250ms.
const derivedNodeTimeout = 250 * time.Millisecond

// pacedNodeTimeout returns the node timeout of a manager of a test on
// redis-server that would otherwise use d: d stretched to the pace measured
// through s now ([redistest.Pace.Stretch]), so that a node on a busy machine
// is not counted as failed for answering late, which only a test on fake
// nodes can tell from a broken one. It logs the pace when it stretches d.
func pacedNodeTimeout(t testing.TB, s *redistest.Server, d time.Duration) time.Duration {
	t.Helper()
	p := redistest.MeasurePace(t, s)
	if nt := p.Stretch(d); nt > d {
		t.Logf("pace %v: node timeout %v rather than %v", p, nt, d)
		return nt
	}
	return d
}

// holdEverywhere is the node timeout of a holder whose test waits for its
// grant on every node (awaitHeld), not only on the quorum its Lock returns
// at: the requests still due keep the node timeout, and one that runs out
// on a busy machine never lands. Two seconds, stretched to the pace
// measured through s.
func holdEverywhere(t testing.TB, s *redistest.Server) dlm.ManagerOption {
	t.Helper()
	return dlm.WithNodeTimeout(pacedNodeTimeout(t, s, 2*time.Second))
}
