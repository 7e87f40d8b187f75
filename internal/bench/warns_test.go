package bench

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

func TestWarnCounter(t *testing.T) {
	start := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	type line struct {
		at    time.Duration // since start
		level slog.Level
		node  string // "" : none
	}
	tests := []struct {
		name          string
		lines         []line
		count, most   int
		first         string
		sinceMarkedAt int // lines logged after the mark, placed before line i
		since         int
	}{
		{name: "none", sinceMarkedAt: 0},
		{
			name: "below Warn not counted",
			lines: []line{
				{0, slog.LevelInfo, "a"}, {0, slog.LevelDebug, "a"}, {time.Second, slog.LevelWarn, "a"},
			},
			count: 1, most: 1, first: "line 2: e", sinceMarkedAt: 1, since: 1,
		},
		{
			name: "a second a node",
			lines: []line{
				{0, slog.LevelWarn, "a"}, {100 * time.Millisecond, slog.LevelWarn, "b"}, {200 * time.Millisecond, slog.LevelWarn, ""},
				{time.Second, slog.LevelWarn, "a"}, {2 * time.Second, slog.LevelError, "a"},
			},
			count: 5, most: 1, first: "line 0: e", sinceMarkedAt: 3, since: 2,
		},
		{
			name: "two lines of a node in a second",
			lines: []line{
				{0, slog.LevelWarn, "a"}, {1100 * time.Millisecond, slog.LevelWarn, "a"}, {1900 * time.Millisecond, slog.LevelWarn, "a"},
				{1950 * time.Millisecond, slog.LevelWarn, "b"},
			},
			count: 4, most: 2, first: "line 0: e", sinceMarkedAt: 4, since: 0,
		},
		{
			name: "the Manager's own lines",
			lines: []line{
				{0, slog.LevelWarn, ""}, {10 * time.Millisecond, slog.LevelWarn, ""}, {20 * time.Millisecond, slog.LevelWarn, ""},
			},
			count: 3, most: 3, first: "line 0: e", sinceMarkedAt: 0, since: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWarnCounter(start)
			logger := slog.New(w)
			if logger.Enabled(context.Background(), slog.LevelInfo) {
				t.Errorf("enabled at Info; want Warn and above only")
			}
			var since func() int
			for i, l := range tt.lines {
				if i == tt.sinceMarkedAt {
					since = w.mark()
				}
				r := slog.NewRecord(start.Add(l.at), l.level, "line "+string(rune('0'+i)), 0)
				if l.node != "" {
					r.AddAttrs(slog.String("node", l.node))
				}
				r.AddAttrs(slog.Int("failed", 3), slog.String("error", "e"))
				if err := w.Handle(context.Background(), r); err != nil {
					t.Fatal(err)
				}
			}
			if since == nil {
				since = w.mark()
			}
			count, most, first := w.counts()
			if count != tt.count || most != tt.most || first != tt.first {
				t.Errorf("counts %d, most %d a node-second, first %q; want %d, %d, %q", count, most, first, tt.count, tt.most, tt.first)
			}
			if got := since(); got != tt.since {
				t.Errorf("%d lines since the mark, want %d", got, tt.since)
			}
		})
	}
}
