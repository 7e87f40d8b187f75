package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// logger writes the demo's log, one line per call, from any goroutine.
// Events carry the time since the start.
type logger struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

// say prints a line without a time.
func (l *logger) say(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, format+"\n", args...)
}

// event prints a line stamped with the time since the start.
func (l *logger) event(format string, args ...any) {
	l.eventAt(time.Now(), format, args...)
}

// eventAt prints a line stamped with the time at since the start.
func (l *logger) eventAt(at time.Time, format string, args ...any) {
	l.say("%8.3fs  "+format, append([]any{at.Sub(l.start).Seconds()}, args...)...)
}
