package dlmtest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// ConnsPoolSize is the pool_size [TestDriverConns] opens its node with for
// its concurrent requests.
const ConnsPoolSize = 4

// TestDriverConns checks that requests that time out do not cost
// connections: requests with a node deadline (package dlm's kind,
// [driver.WithNodeDeadline]) far shorter than the server takes to answer
// them, for a few rounds in which the server holds its writes (CLIENT PAUSE
// WRITE) and then answers them late. The node is opened from
// redis+NAME://addr by the driver registered as name, and the server counts
// the connections it opens over the case (INFO stats,
// total_connections_received):
//
//   - 16 requests at once, pool_size=4: at most twice ConnsPoolSize
//     connections. A request given up on leaves its connection open for the
//     late reply, and the next request does not dial again; an adapter may
//     drop the connections of the requests that time out while the node
//     still runs them on the callers' goroutines, before it knows the node
//     slow, once.
//   - one request after another, the default pool size, as a process
//     contending for one lock sends them: at most 2. While a request is late
//     the node opens no connection for the next: it waits for the late one.
//
// Before that, a client whose request timed out closed its connection, and
// each request of a slow node dialed and ran the handshake anew: thousands
// of connections a second from a busy process.
func TestDriverConns(t *testing.T, name string) {
	for _, tc := range []struct {
		name    string
		query   string
		workers int
		bound   int
	}{
		{"concurrent", "?pool_size=" + strconv.Itoa(ConnsPoolSize), 16, 2 * ConnsPoolSize},
		{"sequential", "", 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testConns(t, "redis+"+name+"://", tc.query, tc.workers, tc.bound)
		})
	}
}

// testConns runs workers callers of a node opened from scheme, the server's
// address and query, and checks that it opens at most bound connections.
func testConns(t *testing.T, scheme, query string, workers, bound int) {
	const (
		rounds   = 3
		hold     = 300 * time.Millisecond // each pause of the server's writes
		deadline = 30 * time.Millisecond  // each request's node deadline
	)
	s := redistest.StartServer(t)
	n, err := dlm.OpenNode(scheme + s.Addr() + query)
	if err != nil {
		t.Fatalf("OpenNode: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	before := acceptedConns(t, s)
	var failed, answered atomic.Int64
	for range rounds {
		if _, err := s.Do("CLIENT", "PAUSE", strconv.Itoa(int(hold/time.Millisecond)), "WRITE"); err != nil {
			t.Fatalf("CLIENT PAUSE: %v", err)
		}
		end := time.Now().Add(hold + hold/2) // past the pause: late replies come
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := "conns{k}" + strconv.Itoa(w)
				for i := 0; time.Now().Before(end); i++ {
					ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(deadline))
					var err error
					if setter, ok := n.(driver.Setter); ok && (w+i)%2 == 0 {
						_, err = setter.SetNXGet(ctx, key, "v", "1000")
					} else {
						_, err = n.Eval(ctx, connsScript, []string{key}, []string{"v"})
					}
					cancel()
					if err == nil {
						answered.Add(1)
					} else {
						// The deadline's error, a socket timeout or the
						// pool's wait: any failure is what a busy process
						// sees of a slow node.
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
	}
	// Each CLIENT PAUSE and INFO of the test is a connection of its own.
	opened := acceptedConns(t, s) - before - rounds - 1
	t.Logf("%d requests failed, %d answered (SetNXGet and Eval); the node opened %d connections (%d callers, %q)",
		failed.Load(), answered.Load(), opened, workers, query)
	if failed.Load() < int64(workers) || answered.Load() == 0 {
		t.Fatalf("%d requests failed and %d answered: the server did not hold them, or never answered", failed.Load(), answered.Load())
	}
	if opened > bound {
		t.Errorf("the node opened %d connections to its server; want at most %d", opened, bound)
	}
}

// connsScript is a write, which CLIENT PAUSE WRITE holds.
var connsScript = driver.NewScript("return redis.call('SET', KEYS[1], ARGV[1], 'PX', 1000)")

// acceptedConns returns how many connections s accepted since it started,
// this one included.
func acceptedConns(t *testing.T, s *redistest.Server) int {
	t.Helper()
	v, err := s.Do("INFO", "stats")
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	info, _ := v.(string)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			c, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO stats: total_connections_received %q: %v", v, err)
			}
			return c
		}
	}
	t.Fatalf("INFO stats: no total_connections_received in %q", info)
	return 0
}
