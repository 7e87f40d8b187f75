package redistest_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the real one does, without failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runFatal runs f on a goroutine of its own, which a Fatalf may end.
func runFatal(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

func TestRedisServerPath(t *testing.T) {
	if p := redistest.RedisServerPath(t); !strings.HasSuffix(p, "redis-server") {
		t.Errorf("RedisServerPath() = %q; want a redis-server binary", p)
	}
	for _, tc := range []struct {
		name, redisServer, path string
	}{
		{"REDIS_SERVER names no file", "/nonexistent/redis-server", os.Getenv("PATH")},
		{"not in PATH", "", t.TempDir()},
	} {
		t.Setenv("REDIS_SERVER", tc.redisServer)
		t.Setenv("PATH", tc.path)
		ft := &fatalRecorder{TB: t}
		runFatal(func() { redistest.RedisServerPath(ft) })
		if !strings.Contains(ft.msg, "apt-get install redis-server") || !strings.Contains(ft.msg, "make test") {
			t.Errorf("%s: RedisServerPath failed with %q; want the install command and make test", tc.name, ft.msg)
		}
	}
}
