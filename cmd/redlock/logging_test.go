package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestDedupHandler(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := &dedupHandler{
		next:  slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}),
		every: 10 * time.Second,
		state: &dedupState{last: make(map[string]time.Time)},
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	log := func(at time.Duration, level slog.Level, msg string, attrs ...slog.Attr) {
		r := slog.NewRecord(t0.Add(at), level, msg, 0)
		r.AddAttrs(attrs...)
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	node := func(n string) slog.Attr { return slog.String("node", n) }
	dur := func(d time.Duration) slog.Attr { return slog.Duration("duration", d) }
	log(0, slog.LevelWarn, "node error", node("a"), dur(1))
	log(time.Second, slog.LevelWarn, "node error", node("a"), dur(2))    // repeat: dropped
	log(2*time.Second, slog.LevelWarn, "node error", node("b"), dur(3))  // another node
	log(3*time.Second, slog.LevelError, "node error", node("a"), dur(4)) // errors always pass
	log(4*time.Second, slog.LevelDebug, "node error", node("a"), dur(5)) // debug always passes
	log(4*time.Second, slog.LevelDebug, "node error", node("a"), dur(5)) // even repeated
	log(10*time.Second, slog.LevelWarn, "node error", node("a"), dur(6)) // interval over
	log(11*time.Second, slog.LevelWarn, "node error", node("a"), dur(7)) // dropped again
	log(11*time.Second, slog.LevelInfo, "node error", node("a"), dur(8)) // another level
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var durations []string
	for _, l := range lines {
		_, d, _ := strings.Cut(l, "duration=")
		durations = append(durations, d)
	}
	want := "1ns 3ns 4ns 5ns 5ns 6ns 8ns"
	if got := strings.Join(durations, " "); got != want {
		t.Errorf("records passed (by duration) = %s; want %s\n%s", got, want, out.String())
	}
}

func TestNewLogger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     func(c *config)
		level   slog.Level
		enabled bool
	}{
		{"default warns", func(c *config) {}, slog.LevelWarn, true},
		{"default hides info", func(c *config) {}, slog.LevelInfo, false},
		{"debug", func(c *config) { c.logLevel = slog.LevelDebug }, slog.LevelDebug, true},
		{"quiet hides warnings", func(c *config) { c.quiet = true }, slog.LevelWarn, false},
		{"quiet logs errors", func(c *config) { c.quiet = true }, slog.LevelError, true},
		{"quiet wins over debug", func(c *config) { c.quiet, c.logLevel = true, slog.LevelDebug }, slog.LevelInfo, false},
	}
	for _, tt := range tests {
		c := defaultConfig()
		tt.cfg(c)
		if got := newLogger(c, &bytes.Buffer{}).Enabled(context.Background(), tt.level); got != tt.enabled {
			t.Errorf("%s: Enabled(%v) = %v; want %v", tt.name, tt.level, got, tt.enabled)
		}
	}
	var out bytes.Buffer
	c := defaultConfig()
	c.logFormat = "json"
	newLogger(c, &out).With("key", "job").Warn("redlock: test", "n", 1)
	var rec map[string]any
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil || rec["msg"] != "redlock: test" || rec["key"] != "job" {
		t.Errorf("--log-format json wrote %q (%v); want a JSON record", out.String(), err)
	}
}
