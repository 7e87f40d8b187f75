package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// repeatInterval is how long a warning is not logged again once logged: a
// node that is down while redlock waits fails every attempt, several times a
// second.
const repeatInterval = 10 * time.Second

// newLogger returns the logger of redlock and of package dlm: text or JSON
// records on w, from c's level up, or errors only with --quiet. Neither
// writes a lock's secret or a node's password, nor a character of a node's
// text that a terminal may act on (see printable.go).
func newLogger(c *config, w io.Writer) *slog.Logger {
	level := c.logLevel
	if c.quiet {
		level = max(level, slog.LevelError)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if c.logFormat == "json" {
		h = slog.NewJSONHandler(jsonWriter{w}, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(&dedupHandler{next: h, every: repeatInterval, state: &dedupState{last: make(map[string]time.Time)}})
}

// dedupHandler drops an Info or Warn record that repeats one passed less
// than every ago: same message, same attributes but for timings. Debug
// records, asked for explicitly, and errors always pass.
type dedupHandler struct {
	next  slog.Handler
	every time.Duration
	attrs string // the key of the attributes added by WithAttrs
	state *dedupState
}

// dedupState is shared by a dedupHandler and those derived from it.
type dedupState struct {
	mu   sync.Mutex
	last map[string]time.Time // when each record key last passed
}

// maxKeys bounds dedupState.last; older keys are dropped beyond it.
const maxKeys = 256

func (h *dedupHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *dedupHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo && r.Level < slog.LevelError && h.seen(r) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

// seen reports whether a record with r's key passed less than h.every
// before r, and records r's passing otherwise.
func (h *dedupHandler) seen(r slog.Record) bool {
	key := r.Level.String() + "\x00" + r.Message + "\x00" + h.attrs
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "duration", "attempts":
		default:
			key += "\x00" + a.String()
		}
		return true
	})
	s := h.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.last[key]; ok && r.Time.Sub(t) < h.every {
		return true
	}
	if len(s.last) >= maxKeys {
		for k, t := range s.last {
			if r.Time.Sub(t) >= h.every {
				delete(s.last, k)
			}
		}
		if len(s.last) >= maxKeys {
			clear(s.last)
		}
	}
	s.last[key] = r.Time
	return false
}

func (h *dedupHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	key := h.attrs
	for _, a := range attrs {
		key += "\x00" + a.String()
	}
	return &dedupHandler{next: h.next.WithAttrs(attrs), every: h.every, attrs: key, state: h.state}
}

func (h *dedupHandler) WithGroup(name string) slog.Handler {
	return &dedupHandler{next: h.next.WithGroup(name), every: h.every, attrs: h.attrs + "\x00[" + name + "]", state: h.state}
}
