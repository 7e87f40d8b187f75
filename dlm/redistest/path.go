package redistest

import (
	"os"
	"os/exec"
	"testing"
)

// installHint tells how to get redis-server when it is missing.
const installHint = "the real-Redis tests need redis-server: install it with " +
	"`apt-get install redis-server` on Debian or Ubuntu (`brew install redis` on macOS), " +
	"or run `make test` from the repository root, which installs it; " +
	"set REDIS_SERVER to use a binary outside PATH"

// RedisServerPath returns the redis-server binary the harness runs: the
// REDIS_SERVER environment variable if set, else redis-server from PATH. When
// there is none it fails t with the command that installs it; it never skips,
// so a machine without Redis cannot pass the tests by running none of them.
func RedisServerPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("redistest: REDIS_SERVER=%s: %v; %s", p, err, installHint)
		}
		return path
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found: %v; %s", err, installHint)
	}
	return path
}
