package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SentinelMaster is the name under which [StartSentinel]'s Sentinel
// monitors its master.
const SentinelMaster = "mymaster"

// sentinelReadyTimeout bounds the wait for a new Sentinel to see the
// master's replicas.
const sentinelReadyTimeout = 20 * time.Second

// StartSentinel starts a Sentinel (redis-sentinel, or redis-server
// --sentinel, the same program) that monitors master as [SentinelMaster]
// with a quorum of one, and returns when it knows master's replicas. It
// declares a silent master down after a second and fails over at once.
// The Sentinel is killed in t.Cleanup. The binary is the REDIS_SENTINEL
// environment variable, else redis-sentinel from PATH, else the
// redis-server the harness runs, in Sentinel mode.
func StartSentinel(t testing.TB, master *Server, replicas int) *Server {
	t.Helper()
	host, port, _ := strings.Cut(master.Addr(), ":")
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	lines := []string{
		fmt.Sprintf("sentinel monitor %s %s %s 1", SentinelMaster, host, port),
		"sentinel down-after-milliseconds " + SentinelMaster + " 1000",
		"sentinel failover-timeout " + SentinelMaster + " 10000",
		"sentinel parallel-syncs " + SentinelMaster + " 1",
	}
	if pw := master.cfg.password(); pw != "" {
		lines = append(lines, "sentinel auth-pass "+SentinelMaster+" "+pw)
	}
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatalf("redistest: sentinel configuration: %v", err)
	}
	s := StartServer(t, func(c *serverConfig) { c.sentinelConf = conf })
	for deadline := time.Now().Add(sentinelReadyTimeout); ; time.Sleep(20 * time.Millisecond) {
		v, err := s.Do("SENTINEL", "REPLICAS", SentinelMaster)
		if list, _ := v.([]any); err == nil && len(list) >= replicas {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: Sentinel %s does not see %d replica(s) of %s after %v: %v %v", s.Addr(), replicas, master.Addr(), sentinelReadyTimeout, v, err)
		}
	}
}

// sentinelPath returns the Sentinel binary: REDIS_SENTINEL, redis-sentinel
// from PATH, or serverBin (run with --sentinel either way).
func sentinelPath(serverBin string) string {
	if p := os.Getenv("REDIS_SENTINEL"); p != "" {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if path, err := exec.LookPath("redis-sentinel"); err == nil {
		return path
	}
	return serverBin
}
