package rueidis_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// checkNoLeak makes t fail if, once its cleanups have run (so its nodes and
// clients are closed), a goroutine of rueidis or of this package is still
// running after a grace period. Call it first in a test: cleanups run last
// in, first out.
func checkNoLeak(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			left := clientGoroutines()
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d goroutine(s) left running:\n\n%s", len(left), strings.Join(left, "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func clientGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("github.com/redis/rueidis.")) ||
			bytes.Contains(g, []byte("github.com/dlmgo/redlock/backends/rueidis.")) {
			out = append(out, string(g))
		}
	}
	return out
}
