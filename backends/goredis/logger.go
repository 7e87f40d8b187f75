package goredis

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SetLogger sends the log lines of go-redis itself to l, or discards them
// when l is nil. They are go-redis' own account of what its clients do, such
// as "sentinel: new master=\"mymaster\" addr=\"10.0.0.2:6379\"" after a
// Sentinel failover or "sentinel: GetMasterAddrByName ... failed", apart
// from what package dlm logs. Each line becomes a record whose message is
// the line, starting "redis: " as go-redis' own logger writes it, with the
// attribute client=go-redis, at level Warn
// when the line reports a failure (it says "fail", "error" or "discard")
// and Info otherwise.
//
// go-redis keeps one logger for the whole process ([redis.SetLogger]),
// shared by every go-redis client of the program, the nodes' and the
// program's own, and it logs from goroutines of its own that carry nothing
// of the node or manager they serve. So these lines cannot follow each
// manager's [dlm.WithLogger], and importing this package leaves go-redis'
// logger as it is: by default go-redis writes them to standard error. Call
// SetLogger once, early in main, typically with the logger given to
// WithLogger; it replaces what an earlier [redis.SetLogger] set, and a later
// one replaces it.
func SetLogger(l *slog.Logger) {
	redis.SetLogger(slogLogger{l})
}

// slogLogger is go-redis' logger interface over a [slog.Logger].
type slogLogger struct{ l *slog.Logger }

// Printf logs one line of go-redis.
func (s slogLogger) Printf(ctx context.Context, format string, v ...any) {
	if s.l == nil {
		return
	}
	line := fmt.Sprintf(format, v...)
	level := slog.LevelInfo
	if lower := strings.ToLower(line); strings.Contains(lower, "fail") || strings.Contains(lower, "error") || strings.Contains(lower, "discard") {
		level = slog.LevelWarn
	}
	if !strings.HasPrefix(line, "redis: ") {
		line = "redis: " + line
	}
	s.l.Log(ctx, level, line, slog.String("client", "go-redis"))
}
