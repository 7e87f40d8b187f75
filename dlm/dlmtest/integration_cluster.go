package dlmtest

import (
	"context"
	"errors"
	"github.com/dlmgo/redlock/dlm/redistest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestManagerOnClusters runs the manager-level integration suite of
// [TestManager] with three nodes that are each a whole Redis Cluster of
// [ClusterMasters] masters ([StartRedisCluster]), and then what clusters
// make different: locks over several keys (sharing a hash tag, or refused
// up front with [dlm.ErrInvalid] when they do not), fencing tokens, fair
// waiting and the restart guard, whose scripts use keys derived from the
// lock key. dial gets the cluster's masters' addresses joined by commas
// ([RedisCluster.Addr]) and must return a node for the whole cluster, such
// as go-redis' ClusterClient; the node's Addr must be that same string.
// Killing or pausing a node kills or pauses every master of its cluster.
// Like [TestManager]'s, its subtests run in parallel on clusters of their own.
func TestManagerOnClusters(t *testing.T, dial Dial) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *cluster)
		opts []dlm.ManagerOption
	}{
		{"MutualExclusion", testMutualExclusion, nil},
		{"ReleaseOnFailure", testReleaseOnFailure, nil},
		{"SurvivesMinorityDown", testSurvivesMinorityDown, nil},
		{"FailsCleanlyWithMajorityDown", testFailsWithMajorityDown, nil},
		{"ExtendAfterExpiry", testExtendAfterExpiry, nil},
		{"UnlockAfterExpiryKeepsNewHolder", testUnlockAfterExpiry, nil},
		{"PausedMajorityCancelsDo", testPausedMajorityCancelsDo, nil},
		{"DoOutlivesTTL", testDoOutlivesTTL, nil},
		{"CallerCancelReleases", testCallerCancelReleases, nil},
		{"WakeOnRelease", testWakeOnRelease, nil},
		{"MultiKey", testClusterMultiKey, nil},
		{"Fencing", testClusterFencing, []dlm.ManagerOption{dlm.WithFencing()}},
		{"Fairness", testClusterFairness, []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{})}},
		{"RestartGuard", testClusterGuard, nil},
		{"List", testClusterList, nil},
		{"ForceUnlock", testForceUnlock, nil},
		{"Owner", testOwner, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clusters := redistest.StartRedisClusters(t, 3)
			targets := make([]target, len(clusters))
			for i, rc := range clusters {
				targets[i] = rc
			}
			c := startOn(t, targets, dial, tc.opts...)
			tc.fn(t, c)
			c.close(t)
		})
	}
}

// testClusterMultiKey checks that a lock over keys sharing a hash tag is
// taken on every cluster, conflicts with a lock of one of its keys, and is
// released whole; and that keys of different slots are refused up front.
func testClusterMultiKey(t *testing.T, c *cluster) {
	ctx := context.Background()
	keys := []string{"{order42}:a", "{order42}:b", "{order42}:c"}
	l, err := c.m.TryLockAll(ctx, keys)
	if err != nil {
		t.Fatalf("TryLockAll(%q): %v", keys, err)
	}
	other := c.client(t)
	if _, err := other.TryLock(ctx, keys[1]); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryLock(%q) under a TryLockAll holding it = %v; want ErrNotObtained", keys[1], err)
	}
	awaitEverywhere(t, c, keys, true)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	awaitEverywhere(t, c, keys, false)

	_, err = c.m.TryLockAll(ctx, []string{"a", "b"})
	if !errors.Is(err, dlm.ErrInvalid) || errors.Is(err, dlm.ErrUnavailable) {
		t.Errorf("TryLockAll over keys of two slots = %v; want ErrInvalid, not ErrUnavailable", err)
	}
}

// awaitEverywhere waits until every node holds each of keys (held) or none
// (!held).
func awaitEverywhere(t *testing.T, c *cluster, keys []string, held bool) {
	t.Helper()
	for i := range c.servers {
		for _, k := range keys {
			if !c.await(t, func() bool { return (c.value(t, i, k) != nil) == held }) {
				t.Errorf("node %d holds %q: %v; want %v", i, k, !held, held)
			}
		}
	}
}

// testClusterFencing checks that successive grants of a key, single and
// multi-key, from two managers carry increasing fencing tokens.
func testClusterFencing(t *testing.T, c *cluster) {
	ctx := context.Background()
	ms := []*dlm.Manager{c.m, c.client(t)}
	var last uint64
	for i := range 6 {
		var l *dlm.Lock
		var err error
		if i%2 == 0 {
			l, err = ms[i%2].TryLock(ctx, "{fenced}")
		} else {
			l, err = ms[i%2].TryLockAll(ctx, []string{"{fenced}", "{fenced}:b"})
		}
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if l.Token() <= last {
			t.Errorf("grant %d has fencing token %d; want more than %d", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock %d: %v", i, err)
		}
	}
}

// testClusterFairness checks that two waiters from other managers obtain a
// held lock in the order they asked for it: the second asks once the first
// has its place in the line on every node.
func testClusterFairness(t *testing.T, c *cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), max(30*time.Second, 2*c.patience()))
	defer cancel()
	held, err := c.m.TryLock(ctx, "fair")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 2)
	errs := make(chan error, 2)
	for i := range 2 {
		w := c.client(t)
		go func() {
			l, err := w.Lock(ctx, "fair")
			if err != nil {
				errs <- err
				return
			}
			order <- i
			time.Sleep(100 * time.Millisecond)
			errs <- l.Unlock(ctx)
		}()
		// The waiter's place is taken at its first attempt; on a node
		// that answered after the quorum, a little later.
		for n := range c.servers {
			if !c.await(t, func() bool { return c.waiters(t, n, "fair") > int64(i) }) {
				t.Fatalf("node %d has %d waiters in the line of %q %v after waiter %d asked; want %d", n, c.waiters(t, n, "fair"), "fair", c.patience(), i, i+1)
			}
		}
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("waiter: %v", err)
		}
	}
	if first, second := <-order, <-order; first != 0 || second != 1 {
		t.Errorf("waiters obtained the lock in the order %d, %d; want 0, 1 (the order they asked)", first, second)
	}
}

// waiters returns how many waiters node i has in the line of key.
func (c *cluster) waiters(t *testing.T, i int, key string) int64 {
	t.Helper()
	v, err := c.servers[i].Do("ZCARD", suitePrefix+"{"+key+"}"+script.WaitersSuffix)
	if err != nil {
		t.Fatalf("ZCARD on %s: %v", c.servers[i].Addr(), err)
	}
	n, _ := v.(int64)
	return n
}

// clusterGuardMargin is how long, at the least, the clusters of
// testClusterGuard stay new to its restart guard after the test reads their
// uptime: the window is their uptime plus this margin.
const clusterGuardMargin = 5 * time.Second

// testClusterGuard checks the restart guard on clusters that were just
// started: they are not counted until they have been up for the window,
// then they are, and each keeps the guard key in the lock key's slot.
// Starting three clusters on a loaded machine can take longer than any
// fixed window, so the window is taken from the masters' uptime.
func testClusterGuard(t *testing.T, c *cluster) {
	ctx := context.Background()
	oldest, youngest := time.Duration(0), time.Duration(1<<62)
	for _, tg := range c.servers {
		masters, _ := processes(tg)
		for _, s := range masters {
			up := serverUptime(t, s)
			oldest, youngest = max(oldest, up), min(youngest, up)
		}
	}
	// INFO counts whole seconds: the oldest master is up for less than
	// oldest+1s, so the window leaves the margin before any may count.
	window := oldest + time.Second + clusterGuardMargin
	c.opts = append(c.opts[:len(c.opts):len(c.opts)], dlm.WithRestartGuard(window))
	m := c.client(t)
	_, err := m.TryLock(ctx, "guarded")
	if !errors.Is(err, dlm.ErrNodeRestarted) {
		t.Fatalf("TryLock on clusters up for less than the guard window (%v) = %v; want ErrNodeRestarted", window, err)
	}
	// Every master counts once it has been up for the window, and at the
	// latest a second after it: the youngest has been up for more than
	// youngest-1s.
	time.Sleep(window - youngest + 2*time.Second)
	l, err := m.TryLock(ctx, "guarded")
	if err != nil {
		t.Fatalf("TryLock once the window (%v) passed: %v", window, err)
	}
	defer l.Unlock(ctx)
	// TryLock returns at a quorum: the grant's request to the slowest node
	// may still be under way, so each node is given as long as
	// awaitEverywhere gives a key to show its guard key.
	for i, s := range c.servers {
		var v any
		var err error
		c.await(t, func() bool {
			v, err = s.Do("GET", suitePrefix+"{guarded}:guard")
			return err == nil && v != nil
		})
		if err != nil || v == nil {
			t.Errorf("node %d guard key = %v, %v; want the moment it may be counted from", i, v, err)
		}
	}
}

// serverUptime returns s's uptime as INFO reports it, in whole seconds.
func serverUptime(t *testing.T, s *redistest.Server) time.Duration {
	t.Helper()
	v, err := s.Do("INFO", "server")
	if err != nil {
		t.Fatalf("INFO server on %s: %v", s.Addr(), err)
	}
	info, _ := v.(string)
	for _, line := range strings.Split(info, "\n") {
		if sec, ok := strings.CutPrefix(strings.TrimSpace(line), "uptime_in_seconds:"); ok {
			n, err := strconv.Atoi(sec)
			if err != nil {
				t.Fatalf("INFO server on %s: uptime %q: %v", s.Addr(), sec, err)
			}
			return time.Duration(n) * time.Second
		}
	}
	t.Fatalf("INFO server on %s: no uptime_in_seconds", s.Addr())
	return 0
}
