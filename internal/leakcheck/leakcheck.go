// Package leakcheck finds goroutines a test started and left running.
package leakcheck

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Snapshot records the goroutines running now. Its Check reports any
// goroutine started afterwards that is still running after a grace period.
type Snapshot struct {
	before map[string]bool
	scope  string // the label of a [Scoped] snapshot, "" for all goroutines
}

// Take records the goroutines running now.
func Take() *Snapshot {
	s := &Snapshot{before: make(map[string]bool)}
	for id := range goroutines() {
		s.before[id] = true
	}
	return s
}

// Check fails t if goroutines started since the snapshot are still running
// after waiting up to grace for them to end, and prints their stacks.
func (s *Snapshot) Check(t testing.TB, grace time.Duration) {
	t.Helper()
	if leaked := s.Wait(grace); len(leaked) > 0 {
		t.Errorf("%d goroutine(s) still running after %v:\n\n%s", len(leaked), grace, strings.Join(leaked, "\n\n"))
	}
}

// Wait waits up to grace for the goroutines started since the snapshot to
// end and returns the stacks of those still running. It is for TestMain,
// which has no testing.TB.
func (s *Snapshot) Wait(grace time.Duration) []string {
	deadline := time.Now().Add(grace)
	for {
		leaked := s.leaked()
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(10 * time.Millisecond) // polling for goroutines to end
	}
}

func (s *Snapshot) leaked() []string {
	if s.scope != "" {
		return labelled(s.scope)
	}
	var out []string
	for id, stack := range goroutines() {
		if !s.before[id] && !ignored(stack) {
			out = append(out, stack)
		}
	}
	return out
}

// goroutines returns every goroutine's stack by its "goroutine N" header.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := make(map[string]string)
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		header, _, _ := bytes.Cut(g, []byte(" ["))
		out[string(header)] = string(g)
	}
	return out
}

// ignored says whether a goroutine belongs to the runtime or the testing
// package rather than to the code under test.
func ignored(stack string) bool {
	for _, s := range []string{
		"testing.(*T).Run", "testing.tRunner(", "testing.(*M).", "runtime.goexit()\n\tcreated by runtime",
		"os/signal.signal_recv", "runtime.ensureSigM", "testing.runFuzzing",
	} {
		if strings.Contains(stack, s) {
			return true
		}
	}
	// A context's deadline timer cancelling it: it ends on its own, at
	// once, and belongs to whoever made the context, which has returned.
	if strings.Contains(stack, "created by time.goFunc") && strings.Contains(stack, "context.WithDeadlineCause.func") {
		return true
	}
	// The goroutine running Check itself.
	return strings.Contains(stack, "leakcheck.goroutines(")
}
