package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// pair is five nodes, node 2 possibly with persistence, and two clients
// with a proxy to each node: A (client 0, go-redis) and B (client 1,
// redigo), each a real manager.
type pair struct {
	servers []*redistest.Server
	net     *Net
	a, b    *dlm.Manager
	hist    *History
}

func startPair(t *testing.T, persist bool, opts ...dlm.ManagerOption) *pair {
	t.Helper()
	servers := make([]*redistest.Server, 5)
	others := redistest.StartServers(t, 4, redistest.WithArgs(ServerArgs...))
	copy(servers[:2], others[:2])
	copy(servers[3:], others[2:])
	args := ServerArgs
	if persist {
		args = append(append([]string(nil), ServerArgs...), "--dir", t.TempDir(), "--appendonly", "yes", "--appendfsync", "always")
	}
	servers[2] = redistest.StartServer(t, redistest.WithArgs(args...))
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	n, err := NewNet(addrs, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	p := &pair{servers: servers, net: n, hist: NewHistory()}
	open := func(client int, backend string) *dlm.Manager {
		urls := make([]string, 0, len(addrs))
		for _, a := range n.Addrs(client) {
			urls = append(urls, NodeURL(backend, a))
		}
		m, err := dlm.Open(urls, append([]dlm.ManagerOption{dlm.WithNodeTimeout(pairNodeTimeout)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	p.a, p.b = open(0, "goredis"), open(1, "redigo")
	return p
}

func (p *pair) close(t *testing.T) {
	t.Helper()
	for _, m := range []*dlm.Manager{p.a, p.b} {
		if err := m.Close(); err != nil {
			t.Errorf("Manager.Close: %v", err)
		}
	}
	if err := p.net.Close(); err != nil {
		t.Errorf("closing proxies: %v", err)
	}
}

// dbsize returns the number of lock keys on each node (not counting the
// restart guard's keys).
func (p *pair) dbsize(t *testing.T) []int64 {
	t.Helper()
	out := make([]int64, len(p.servers))
	for i, s := range p.servers {
		// A node restarted with appendonly answers LOADING until it has
		// read its file back, which takes longer on a loaded machine.
		v, err := s.Do("KEYS", "*")
		for end := time.Now().Add(5 * time.Second); err != nil && strings.HasPrefix(err.Error(), "LOADING") && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
			v, err = s.Do("KEYS", "*")
		}
		if err != nil {
			t.Fatalf("KEYS on node %d: %v", i, err)
		}
		for _, k := range v.([]any) {
			if !strings.HasSuffix(k.(string), ":guard") {
				out[i]++
			}
		}
	}
	return out
}

// pairNodeTimeout is the node timeout of a pair's managers.
const pairNodeTimeout = 250 * time.Millisecond

// lockOn makes client (0: A, 1: B) take key with ttl while it can reach only
// the nodes in reach: the proxies to the others drop every connection, so
// those nodes fail at once. It records the grant in the history and returns
// the lock and its grant id, or the error.
//
// A grant returns once a quorum said yes, and the requests to the other
// nodes may not have been sent yet; the proxies keep dropping until the
// attempt's node timeout has passed, after which the client sends none of
// them: the backends send no request whose deadline has passed.
func (p *pair) lockOn(t *testing.T, client int, key string, ttl time.Duration, reach ...int) (*dlm.Lock, int, error) {
	t.Helper()
	m, name := p.a, "A"
	if client == 1 {
		m, name = p.b, "B"
	}
	var cut []int
	for i := range p.servers {
		ok := false
		for _, r := range reach {
			ok = ok || r == i
		}
		if !ok {
			cut = append(cut, i)
			p.net.Proxies[client][i].Drop()
		}
	}
	start := time.Now()
	defer func() {
		time.Sleep(time.Until(start.Add(pairNodeTimeout)))
		for _, i := range cut {
			p.net.Proxies[client][i].Heal()
		}
	}()
	l, err := m.TryLock(context.Background(), key, dlm.WithTTL(ttl))
	if err != nil {
		return nil, -1, err
	}
	return l, p.hist.Grant(key, name, start, time.Now(), l.Until(), 0), nil
}

// TestRestartAtOnceIsUnsafe constructs, deterministically, the double grant
// that Redlock's rules forbid: A holds the lock on nodes {0,1,2}; node 2 is
// killed and restarted empty at once; B, reaching nodes {2,3,4}, obtains the
// lock while A's validity still runs. The checker must flag it: the spec's
// rule — a crashed node rejoins only after the largest TTL, or persists
// every write — is real, not hypothetical. With appendfsync always, the
// same sequence is safe: node 2 comes back with A's key.
//
// With the restart guard (dlm.WithRestartGuard), node 2 is not counted
// until it has been up for the largest TTL, and the violation is gone. B's
// manager never saw node 2 before its restart: the guard works from the
// node's uptime, not from a run_id change it would have to witness. Since
// every node here was just started, the guarded row first waits out the
// TTL, so that A's nodes count.
func TestRestartAtOnceIsUnsafe(t *testing.T) {
	for _, tc := range []struct {
		name          string
		guard         bool // the manager's restart guard is on
		persist       bool // node 2 runs with appendonly yes, appendfsync always
		wantViolation bool
	}{
		{name: "empty restart, no guard", wantViolation: true},
		{name: "restart with appendfsync always", persist: true},
		{name: "empty restart, restart guard", guard: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := leakcheck.Take()
			var opts []dlm.ManagerOption
			if tc.guard {
				opts = guardOpts()
			}
			p := startPair(t, tc.persist, opts...)
			const key, ttl = "restart-at-once", 3 * time.Second
			if tc.guard {
				// Every node is older than the window (the TTL): INFO
				// counts uptime in whole seconds, so the guard counts a
				// node up to a second after the window.
				time.Sleep(ttl + time.Second + restartMargin)
			}
			a, aid, err := p.lockOn(t, 0, key, ttl, 0, 1, 2)
			if err != nil {
				t.Fatalf("A's TryLock reaching nodes 0, 1, 2: %v", err)
			}
			if got := p.dbsize(t); fmt.Sprint(got) != "[1 1 1 0 0]" {
				t.Fatalf("keys per node after A's lock: %v; want [1 1 1 0 0]", got)
			}
			restarted := time.Now()
			p.servers[2].Restart() // kill -9, then start again at once
			downFor := time.Since(restarted)
			want := int64(0)
			if tc.persist {
				want = 1
			}
			if got := p.dbsize(t)[2]; got != want {
				t.Fatalf("node 2 holds %d keys after its restart; want %d", got, want)
			}
			b, bid, err := p.lockOn(t, 1, key, ttl, 2, 3, 4)
			now := time.Now()
			switch {
			case tc.wantViolation && err != nil:
				t.Fatalf("B's TryLock reaching nodes 2, 3, 4 after node 2 restarted empty: %v; want the double grant", err)
			case !tc.wantViolation && err == nil:
				t.Errorf("B obtained the lock while A holds it (A valid until %v from now)", time.Until(a.Until()).Round(time.Millisecond))
			case tc.guard && !errors.Is(err, dlm.ErrNodeRestarted):
				t.Errorf("B's TryLock: %v; want node 2 refused with ErrNodeRestarted", err)
			case !tc.wantViolation && !tc.guard && !errors.Is(err, dlm.ErrNotObtained):
				t.Errorf("B's TryLock: %v; want ErrNotObtained", err)
			}
			if now.After(a.Until()) {
				t.Fatalf("A's validity ended before B's attempt; the test's timing is off")
			}
			// B works and lets go; A, which never lost its lock as far
			// as it can tell, still holds it, and lets go after B.
			if b != nil {
				time.Sleep(20 * time.Millisecond)
				p.hist.Release(bid, time.Now(), b.Until())
				_ = b.Unlock(context.Background())
			}
			p.hist.Release(aid, time.Now(), a.Until())
			_ = a.Unlock(context.Background())
			rep := Check(p.hist.Grants())
			figure(t, "chaos-restart: case=%q node2_down_for=%v violations=%d", tc.name, downFor.Round(time.Millisecond), len(rep.Violations))
			for _, v := range rep.Violations {
				t.Logf("violation (expected: %v): %v", tc.wantViolation, v)
			}
			if got := len(rep.Violations) > 0; got != tc.wantViolation {
				t.Errorf("checker found %d violations; want a violation: %v", len(rep.Violations), tc.wantViolation)
			}
			p.close(t)
			snap.Check(t, 5*time.Second)
		})
	}
}

// guardOpts returns the manager options that turn the restart guard on,
// with a window covering the test's TTL, which is also the managers'.
func guardOpts() []dlm.ManagerOption {
	return []dlm.ManagerOption{dlm.WithTTL(3 * time.Second), dlm.WithRestartGuard(3 * time.Second)}
}

// TestDelayedRestartIsSafe is the same sequence as TestRestartAtOnceIsUnsafe
// with the rule kept: node 2 stays down for longer than the TTL before it
// rejoins empty. B, reaching only nodes {2,3,4}, tries all along: it fails
// while node 2 is down (two votes of five) and obtains the lock only after
// the restart, by when A's validity has ended.
func TestDelayedRestartIsSafe(t *testing.T) {
	snap := leakcheck.Take()
	p := startPair(t, false)
	const key, ttl = "delayed-restart", time.Second
	a, aid, err := p.lockOn(t, 0, key, ttl, 0, 1, 2)
	if err != nil {
		t.Fatalf("A's TryLock reaching nodes 0, 1, 2: %v", err)
	}
	killed := time.Now()
	p.servers[2].Kill()
	failed := 0
	for time.Since(killed) < ttl+restartMargin {
		if _, _, err := p.lockOn(t, 1, key, ttl, 2, 3, 4); err == nil {
			t.Fatalf("B obtained the lock with node 2 down and A holding nodes 0 and 1")
		} else if !errors.Is(err, dlm.ErrUnavailable) && !errors.Is(err, dlm.ErrNotObtained) {
			t.Fatalf("B's TryLock: %v", err)
		}
		failed++
		time.Sleep(20 * time.Millisecond)
	}
	p.servers[2].Restart()
	restarted := time.Now()
	var b *dlm.Lock
	var bid int
	for b == nil && time.Since(restarted) < 5*time.Second {
		if b, bid, err = p.lockOn(t, 1, key, ttl, 2, 3, 4); err != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if b == nil {
		t.Fatalf("B never obtained the lock after node 2 rejoined: %v", err)
	}
	p.hist.Release(aid, a.Until(), a.Until()) // A acted up to the end of its validity
	_ = a.Unlock(context.Background())
	p.hist.Release(bid, time.Now(), b.Until())
	_ = b.Unlock(context.Background())
	rep := Check(p.hist.Grants())
	figure(t, "chaos-restart: case=%q node2_down_for=%v b_failed_attempts_while_down=%d violations=%d",
		"delayed restart", restarted.Sub(killed).Round(time.Millisecond), failed, len(rep.Violations))
	if len(rep.Violations) > 0 {
		t.Errorf("violations after a delayed restart: %v", rep.Violations)
	}
	if failed == 0 {
		t.Errorf("B made no attempt while node 2 was down")
	}
	p.close(t)
	snap.Check(t, 5*time.Second)
}
