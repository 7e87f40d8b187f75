package dlm

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/leakcheck"
	"github.com/dlmgo/redlock/internal/testflags"
)

// TestMain fails the run if goroutines of this package outlive the tests.
// Its tests wait on TTLs and servers: four run at once unless -parallel says.
func TestMain(m *testing.M) {
	testflags.DefaultParallel(4)
	snap := leakcheck.Take()
	code := m.Run()
	if code == 0 {
		if leaked := snap.Wait(2 * time.Second); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "goroutines left running after the tests:\n\n%s\n", strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// checkLeaks fails t if a goroutine started during the test is still there
// when the test's cleanups run. Call it first, so that it runs after the
// other cleanups (managers closed). It sees only the test's own goroutines,
// so the test may run in parallel with others.
func checkLeaks(t *testing.T) {
	t.Helper()
	snap := leakcheck.Scoped()
	t.Cleanup(func() { snap.Check(t, 2*time.Second) })
}

// newFakes returns n healthy fake nodes named fake-0 to fake-(n-1).
func newFakes(n int) []*fakeNode {
	fs := make([]*fakeNode, n)
	for i := range fs {
		fs[i] = newFakeNode(i)
	}
	return fs
}

func asNodes(fs []*fakeNode) []driver.Node {
	ns := make([]driver.Node, len(fs))
	for i, f := range fs {
		ns[i] = f
	}
	return ns
}

// asManager returns opts as a manager's options.
func asManager(opts []Option) []ManagerOption {
	out := make([]ManagerOption, len(opts))
	for i, o := range opts {
		if o != nil {
			out[i] = o
		}
	}
	return out
}

// newManager returns a Manager over fs, closed when the test ends.
func newManager(t *testing.T, fs []*fakeNode, opts ...ManagerOption) *Manager {
	t.Helper()
	m, err := New(asNodes(fs), opts...)
	if err != nil {
		t.Fatalf("New(%d fakes) = %v", len(fs), err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// patient is the node timeout of a manager over fake nodes whose test
// needs its first attempt to succeed and then every node to hold the lock:
// far above what a loaded machine takes to run a fake's request, so that no
// reply comes late and every request runs before its deadline; below a TTL
// of a second.
var patient = WithNodeTimeout(500 * time.Millisecond)

// rkey is the Redis key of lock key under the default prefix.
func rkey(key string) string { return "redlock:{" + key + "}" }

// countAll sums the calls of script name over fs.
func countAll(fs []*fakeNode, name string) int {
	n := 0
	for _, f := range fs {
		n += f.count(name)
	}
	return n
}

// holders returns the value of key on each node, "" where it is absent.
func holders(fs []*fakeNode, key string) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i], _, _ = f.get(key)
	}
	return out
}

// nodeErrors returns the node failures an error carries, in the order given.
func nodeErrors(err error) []*NodeError {
	var qerr *QuorumError
	if !errors.As(err, &qerr) || qerr.Err == nil {
		return nil
	}
	var merr *multierror.Error
	if !errors.As(qerr.Err, &merr) {
		return nil
	}
	var out []*NodeError
	for _, e := range merr.Errors {
		var nerr *NodeError
		if errors.As(e, &nerr) {
			out = append(out, nerr)
		}
	}
	return out
}

// logBuffer is a concurrency-safe buffer for a slog handler's output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLogger returns a logger writing every level as text to a buffer.
func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// waitFor waits for cond to hold, for work the package finishes in the
// background (releasing nodes that answer late), and fails t if it does
// not: within 5s, or 20 times the latest its own 1ms polling sleeps woke
// past their time where that is more (the timer half of
// redistest.Pace.Slack, measured on the wait itself: these tests have no
// server to measure round trips through).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	var late time.Duration
	for !cond() {
		if waited := time.Since(start); waited > max(5*time.Second, 20*late) {
			t.Fatalf("timed out waiting for %s (%v; timers up to %v late)", what, waited.Round(time.Millisecond), late.Round(time.Microsecond))
		}
		slept := time.Now()
		time.Sleep(time.Millisecond) // polling a condition, not a timing assertion
		late = max(late, time.Since(slept)-time.Millisecond)
	}
}
