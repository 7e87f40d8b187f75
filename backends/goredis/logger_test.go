package goredis

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// stderrLogger writes go-redis' lines to standard error, as go-redis'
// default logger does, for the tests to put back.
type stderrLogger struct{ l *log.Logger }

func (s stderrLogger) Printf(_ context.Context, format string, v ...any) {
	s.l.Printf(format, v...)
}

// lockedBuffer is a bytes.Buffer safe for the goroutines of go-redis.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestSetLoggerRoutesSentinelLines checks that go-redis' own lines, here
// the Sentinel client's "new master" when it first finds the master, reach
// the slog.Logger given to SetLogger, with their level. It swaps go-redis'
// process-wide logger, so it does not run in parallel.
func TestSetLoggerRoutesSentinelLines(t *testing.T) {
	var buf lockedBuffer
	SetLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { redis.SetLogger(stderrLogger{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)}) })

	master := redistest.StartServer(t)
	sentinel := redistest.StartSentinel(t, master, 0)
	n := openNode(t, "redis+goredis://"+sentinel.Addr()+"?sentinel_master="+redistest.SentinelMaster)
	if v, err := eval(n, echo, nil, []string{"hi"}); v != "hi" || err != nil {
		t.Fatalf("Eval through Sentinel = %v, %v; want hi, nil", v, err)
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Level, Msg, Client string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if strings.Contains(rec.Msg, "sentinel: new master") && strings.Contains(rec.Msg, master.Addr()) {
			found = true
			if rec.Level != "INFO" || rec.Client != "go-redis" || !strings.HasPrefix(rec.Msg, "redis: ") {
				t.Errorf("record %s; want level INFO, client go-redis, a message starting redis:", line)
			}
		}
	}
	if !found {
		t.Errorf("log = %q; want go-redis' line on the new master %s", buf.String(), master.Addr())
	}
}

// TestSetLoggerLevels checks the level of go-redis' lines, and that a nil
// logger discards them.
func TestSetLoggerLevels(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	l := slogLogger{slog.New(slog.NewTextHandler(&buf, nil))}
	l.Printf(context.Background(), "sentinel: new master=%q addr=%q", "m", "h:1")
	l.Printf(context.Background(), "sentinel: GetMasterAddrByName name=%q failed: %s", "m", "EOF")
	l.Printf(context.Background(), "redis: discarding bad PubSub connection: %s", "x")
	got := buf.String()
	for _, want := range []string{
		`level=INFO msg="redis: sentinel: new master=\"m\" addr=\"h:1\"" client=go-redis`,
		`level=WARN msg="redis: sentinel: GetMasterAddrByName name=\"m\" failed: EOF" client=go-redis`,
		`level=WARN msg="redis: discarding bad PubSub connection: x" client=go-redis`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log = %q; want %q", got, want)
		}
	}
	slogLogger{}.Printf(context.Background(), "dropped %d", 1) // must not panic
}
