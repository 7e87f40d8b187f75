package main

import (
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"
)

// console is redlock's stderr: log records and, on a terminal, the waiting
// line under them. The waiting line is erased before each record is written
// and drawn again after it, so the two never mix. It is safe for concurrent
// use; each Write should be one whole record, as slog's handlers write them.
type console struct {
	mu   sync.Mutex
	w    io.Writer
	line string // the waiting line on screen, or ""
}

// Write writes p above the waiting line.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	n, err := c.w.Write(p)
	c.draw()
	return n, err
}

// setLine replaces the waiting line with s; "" clears it. s must not hold a
// newline, and should fit the terminal's width, or erasing it leaves its
// first rows behind.
func (c *console) setLine(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == c.line {
		return
	}
	c.erase()
	c.line = s
	c.draw()
}

// erase blanks the waiting line and returns to its start. It is spaces
// rather than an escape sequence, so that any terminal understands it.
func (c *console) erase() {
	if c.line != "" {
		io.WriteString(c.w, "\r"+strings.Repeat(" ", utf8.RuneCountInString(c.line))+"\r")
	}
}

func (c *console) draw() {
	if c.line != "" {
		io.WriteString(c.w, c.line)
	}
}

// isTerminal reports whether f is a terminal (or another character
// device), where a waiting line is worth drawing.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
