//go:build go1.25

// The Warn lines of auto-extension (warnlog.go) on testing/synctest's fake
// clock (see synctest_test.go for the build constraint and its go:debug
// line): in proportion to what happens, not to the locks held.

package dlm

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// warnLine is a Warn record: when, its message and its node attribute.
type warnLine struct {
	at             time.Time
	msg, node, err string
}

// countingHandler is a slog.Handler that keeps the Warn records and
// counts the others.
type countingHandler struct {
	mu    sync.Mutex
	warns []warnLine
	other int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Level < slog.LevelWarn {
		h.other++
		return nil
	}
	w := warnLine{at: r.Time, msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "node":
			w.node = a.Value.String()
		case "error":
			w.err = a.Value.String()
		}
		return true
	})
	h.warns = append(h.warns, w)
	return nil
}

func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) lines() []warnLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]warnLine(nil), h.warns...)
}

// TestOverloadWarnsOncePerNodeASecond checks that node failures of
// auto-extensions are logged at most once per node a second, with their
// count, however many locks they hit: 100 locks held for 10s while two
// of five nodes refuse every extension.
func TestOverloadWarnsOncePerNodeASecond(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		h := &countingHandler{}
		m := newManager(t, fs, WithTTL(time.Second), WithLogger(slog.New(h)))
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		lockAll(t, m, keys)
		for _, f := range fs[3:] {
			f.injectFor(func(name string, _ []string) (fault, time.Duration) {
				if name == "extend" {
					return refuse, 0
				}
				return healthy, 0
			})
		}
		start := time.Now()
		const run = 10 * time.Second
		time.Sleep(run)
		m.Close()
		lines := h.lines()
		t.Logf("%d Warn lines in %v for 100 locks, 2 failing nodes", len(lines), run)
		last := map[string]time.Time{}
		for _, w := range lines {
			k := w.node + " " + w.msg
			if at, ok := last[k]; ok && w.at.Sub(at) < time.Second {
				t.Errorf("%q of node %q logged at start+%v and start+%v; want at most one a second", w.msg, w.node, at.Sub(start), w.at.Sub(start))
				break
			}
			last[k] = w.at
		}
		if max := (len(fs) + 2) * int(run/time.Second+1); len(lines) > max {
			t.Errorf("%d Warn lines; want at most %d: one per node a second, and one for the manager's renewals", len(lines), max)
		}
		if len(lines) == 0 {
			t.Errorf("no Warn line; want the failing nodes reported")
		}
	})
}

// TestCloseWarnsNothing checks that closing a healthy Manager that holds
// many auto-extended locks, some of whose extensions are in flight, logs
// nothing at Warn, then or when their keys run out: a lock that stops
// because its Manager closed is no failure.
func TestCloseWarnsNothing(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		var rec batchRecorder
		for _, f := range fs {
			rec.on(f, func(string, []string) (fault, time.Duration) { return healthy, 10 * time.Millisecond })
		}
		h := &countingHandler{}
		m := newManager(t, fs, WithTTL(time.Second), WithLogger(slog.New(h)))
		keys := make([]string, 2000)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		m.extender.entries = 16 // many batches: some in flight, some queued at Close
		lockAll(t, m, keys)
		for {
			rec.mu.Lock()
			sent := len(rec.batches)
			rec.mu.Unlock()
			if sent > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		m.Close()
		time.Sleep(3 * time.Second)
		if lines := h.lines(); len(lines) > 0 {
			t.Errorf("%d Warn lines at Close of a healthy manager holding 2000 locks; want 0; first %q: %s", len(lines), lines[0].msg, lines[0].err)
		}
	})
}
