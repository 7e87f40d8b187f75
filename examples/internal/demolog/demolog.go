// Package demolog writes the examples' logs: plain lines, and events
// stamped with the time since the start.
package demolog

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Logger writes one line per call, from any goroutine.
type Logger struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

// New returns a Logger writing to out whose events count from now.
func New(out io.Writer) *Logger { return &Logger{out: out, start: time.Now()} }

// Say prints a line without a time.
func (l *Logger) Say(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, format+"\n", args...)
}

// Event prints a line stamped with the time since the start.
func (l *Logger) Event(format string, args ...any) {
	l.EventAt(time.Now(), format, args...)
}

// EventAt prints a line stamped with the time at since the start.
func (l *Logger) EventAt(at time.Time, format string, args ...any) {
	l.Say("%8.3fs  "+format, append([]any{at.Sub(l.start).Seconds()}, args...)...)
}
