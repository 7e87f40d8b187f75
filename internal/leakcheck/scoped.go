package leakcheck

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
)

// labelKey is the goroutine label a scoped snapshot marks its goroutines
// with. Goroutines inherit their creator's labels, so every goroutine the
// marked one starts, and those they start in turn, carry it.
const labelKey = "leakcheck"

var lastScope atomic.Uint64

// Scoped is [Take] for a test that runs in parallel with others: its Check
// and Wait report only goroutines started, after the call, by the calling
// goroutine or by goroutines it started (their goroutine label says so), so
// the goroutines of tests running beside it are not taken for its own. It
// replaces the calling goroutine's labels. Goroutines the code under test
// starts from one created before the call (a manager opened earlier) are not
// seen: take the snapshot before creating what the test checks.
func Scoped() *Snapshot {
	id := strconv.FormatUint(lastScope.Add(1), 10)
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(labelKey, id)))
	s := Take()
	s.scope = fmt.Sprintf("%q:%q", labelKey, id)
	return s
}

// labelled returns the number of goroutines carrying scope's label, by
// their stacks, from the goroutine profile (the one listing that shows
// labels), less those that belong to the testing package, the runtime or
// this package.
func labelled(scope string) []string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return []string{"leakcheck: goroutine profile: " + err.Error()}
	}
	var out []string
	// Records are separated by blank lines: "N @ pcs", "# labels: {...}",
	// then one "#\tpc\tfunction+off\tfile:line" line per frame.
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if !strings.Contains(rec, "\n# labels: {") || !strings.Contains(rec, scope) {
			continue
		}
		if ignoredFrames(rec) {
			continue
		}
		out = append(out, rec)
	}
	return out
}

// ignoredFrames is [ignored] for a record of the goroutine profile, whose
// frames are written "function+offset" and which has no "created by" line.
func ignoredFrames(rec string) bool {
	for _, s := range []string{
		"testing.(*T).Run+", "testing.tRunner+", "testing.(*M).", "os/signal.signal_recv+", "runtime.ensureSigM",
		"testing.runFuzzing", "leakcheck.labelled+",
	} {
		if strings.Contains(rec, s) {
			return true
		}
	}
	return strings.Contains(rec, "context.WithDeadlineCause.func")
}
