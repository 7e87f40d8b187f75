package chaos

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// resource is the protected resource of one trial: it receives every
// holder's writes, checks their tokens with [dlm.Fence] when fenced, and
// records what it accepted. A grant's seq is its place in the order the
// trial granted the lock (1, 2, ...): a write accepted from a grant after a
// later grant's write was accepted is a stale write accepted, whatever the
// tokens said — the resource's writes are no longer in the grants' order.
type resource struct {
	mu       sync.Mutex
	fenced   bool
	fence    dlm.Fence
	maxSeq   int // the latest grant whose write was accepted
	accepted int
	stale    int
	refused  int
}

// write is a write of grant seq under token and grant id; it reports
// whether the resource accepted it.
func (r *resource) write(seq int, token, grant uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced {
		if err := r.fence.Admit(token, grant); err != nil {
			if !errors.Is(err, dlm.ErrStaleToken) {
				panic(err)
			}
			r.refused++
			return false
		}
	}
	r.accepted++
	if seq < r.maxSeq {
		r.stale++
	}
	r.maxSeq = max(r.maxSeq, seq)
	return true
}

// tally is what a cell's trials observed.
type tally struct {
	Trials   int // trials run to their end
	Void     int // trials whose timing went off (a validity ended too early); run again
	Overlaps int // trials in which two holders' validity windows overlapped
	Stale    int // stale writes the resource accepted
	Refused  int // writes the resource refused
	Notes    map[string]int
}

// void counts a trial whose timing went off, to be run again, and fails tb
// once voids outnumber twice the trials wanted: a cell whose every trial is
// void (a machine too slow for its timeouts, or a setup the manager
// refuses) must end, not run forever.
func (t *tally) void(tb testing.TB, trials int) {
	tb.Helper()
	if t.Void++; t.Void > 2*trials+10 {
		tb.Fatalf("%d trials void, %d counted of %d: the machine is too slow for the cell's timeouts", t.Void, t.Trials, trials)
	}
}

func (t *tally) note(k string) {
	if t.Notes == nil {
		t.Notes = map[string]int{}
	}
	t.Notes[k]++
}

// add counts one trial: its history and its resource.
func (t *tally) add(h *History, r *resource) {
	t.Trials++
	if rep := Check(h.Grants()); rep.Count(Overlap) > 0 {
		t.Overlaps++
	}
	t.Stale += r.stale
	t.Refused += r.refused
}

func (t *tally) merge(o tally) {
	t.Trials += o.Trials
	t.Void += o.Void
	t.Overlaps += o.Overlaps
	t.Stale += o.Stale
	t.Refused += o.Refused
	for k, v := range o.Notes {
		if t.Notes == nil {
			t.Notes = map[string]int{}
		}
		t.Notes[k] += v
	}
}

func (t *tally) notes() string {
	if len(t.Notes) == 0 {
		return ""
	}
	m := make(map[string]int64, len(t.Notes))
	for k, v := range t.Notes {
		m[k] = int64(v)
	}
	return strings.ReplaceAll(FormatCounts(m), ",", ", ")
}

// waitStopped returns once process pid is in the stopped state (SIGSTOP
// has taken effect), read from /proc.
func waitStopped(t testing.TB, pid int) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/stat", pid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		// pid (comm) state ...: the state follows the last ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 && (s[i+2] == 'T' || s[i+2] == 't') {
			return
		}
	}
	t.Fatalf("process %d not stopped 5s after %v", pid, syscall.SIGSTOP)
}
