package bench

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// warnCounter is the logger of a held-locks case's Manager: a slog.Handler
// that counts the lines logged at Warn or above, and for each node (the
// line's "node" attribute; none: the Manager's own lines) how many fell in
// each second since start. It keeps counts, not lines: a library that logs
// a line per lock costs the case no more memory than one that logs a line
// a second. Below Warn it is disabled, so the Manager builds no event for
// it.
type warnCounter struct {
	start time.Time

	mu      sync.Mutex
	lines   int
	first   string             // the first line's message
	perNode map[warnSecond]int // lines by node and second
	most    int                // the most lines of one node in one second
	densest string             // the node and message of the line that made most
}

// warnSecond is a node's second of the case.
type warnSecond struct {
	node string
	sec  int64
}

func newWarnCounter(start time.Time) *warnCounter {
	return &warnCounter{start: start, perNode: map[warnSecond]int{}}
}

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	node, cause := "", ""
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "node":
			node = a.Value.String()
		case "error":
			cause = a.Value.String()
		}
		return true
	})
	at := r.Time
	if at.IsZero() {
		at = time.Now()
	}
	k := warnSecond{node, int64(at.Sub(w.start) / time.Second)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lines++; w.lines == 1 {
		w.first = r.Message
		if cause != "" {
			w.first += ": " + cause
		}
	}
	w.perNode[k]++
	if n := w.perNode[k]; n > w.most {
		w.most, w.densest = n, fmt.Sprintf("node %q: %s", node, r.Message)
	}
	return nil
}

func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

// counts returns the lines counted, the most of one node (or of the
// Manager's own lines) in one second of the case, and the first line's
// message.
func (w *warnCounter) counts() (lines, perNodeSecond int, first string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines, w.most, w.first
}

// densestLine names the node and message of the line that made the most
// lines of one node in one second.
func (w *warnCounter) densestLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.densest
}

// mark starts counting the lines logged from now; the function it returns
// tells how many were.
func (w *warnCounter) mark() func() int {
	w.mu.Lock()
	from := w.lines
	w.mu.Unlock()
	return func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.lines - from
	}
}
