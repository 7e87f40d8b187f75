package dlm_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestUnlockOnFrozenNodeRedis checks, on real processes, that an Unlock
// whose release fails on a node frozen by SIGSTOP leaves no key behind
// once the node runs again: the release is retried, and the key is gone
// from every node long before its TTL. The frozen node has not loaded the
// release script yet, so the EVALSHA queued in its socket answers NOSCRIPT
// on SIGCONT, to a client that gave up on it: only a retry frees the key.
func TestUnlockOnFrozenNodeRedis(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	// The retries wait up to a tenth of the TTL between sends, and each
	// send up to a node timeout: a TTL of 40 node timeouts at this pace, 30 s
	// at least, leaves half of it far more than a few of them take.
	nt := pacedNodeTimeout(t, srvs[0], derivedNodeTimeout)
	ttl := max(30*time.Second, 40*nt)
	m := redisManager(t, srvs, dlm.WithTTL(ttl), dlm.WithNodeTimeout(nt))
	ctx := context.Background()
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		waitCond(t, "node "+strconv.Itoa(i)+" to run the grant", func() bool { return pttl(t, s, "k") > 0 })
	}
	srvs[0].Pause()
	err = l.Unlock(ctx)
	srvs[0].Resume()
	if err != nil {
		t.Errorf("Unlock() with 1 of 3 nodes frozen = %v; want nil (a quorum released it)", err)
	}
	start := time.Now()
	// Counts, not timing: the key must go, and long before its TTL.
	for {
		left := 0
		for _, s := range srvs {
			if pttl(t, s, "k") != -2 {
				left++
			}
		}
		if left == 0 {
			t.Logf("the key was gone from every node %v after SIGCONT", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > ttl/2 {
			t.Fatalf("%d of 3 nodes still hold the key %v after SIGCONT (half its TTL of %v); want none", left, time.Since(start).Round(time.Millisecond), ttl)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not a timing assertion
	}
}
