package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// replicaSyncTimeout bounds the wait for a new replica's first sync.
const replicaSyncTimeout = 20 * time.Second

// StartReplica starts a redis-server that replicates master (--replicaof)
// and returns once master reports it online. It is killed in t.Cleanup.
func StartReplica(t testing.TB, master *Server, opts ...ServerOption) *Server {
	t.Helper()
	host, port, _ := strings.Cut(master.Addr(), ":")
	// A replica saves the master's data it receives as dump.rdb in its
	// working directory: keep it out of the package's.
	r := StartServer(t, append(opts, WithArgs("--replicaof", host, port, "--dir", t.TempDir()))...)
	want := "port=" + strconv.Itoa(r.Port()) + ",state=online"
	for deadline := time.Now().Add(replicaSyncTimeout); ; time.Sleep(20 * time.Millisecond) {
		v, err := master.Do("INFO", "replication")
		info, _ := v.(string)
		if err == nil && strings.Contains(info, want) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: replica %s not online at %s after %v: %v %q", r.Addr(), master.Addr(), replicaSyncTimeout, err, info)
		}
	}
}
