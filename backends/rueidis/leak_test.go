package rueidis_test

import (
	"testing"
	"time"

	"github.com/dlmgo/redlock/internal/leakcheck"
)

// checkNoLeak makes t fail if, once its cleanups have run (so its nodes and
// clients are closed), a goroutine the test started is still running after a
// grace period. Call it first in a test: cleanups run last in, first out.
// It sees only the test's own goroutines, so tests may run in parallel.
func checkNoLeak(t *testing.T) {
	t.Helper()
	snap := leakcheck.Scoped()
	t.Cleanup(func() { snap.Check(t, 5*time.Second) })
}
