package memlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// fenceNodes is three nodes of one kind, with the commands a test needs to
// look at and change their keys behind the manager's back.
type fenceNodes struct {
	nodes []driver.Node
	// flush deletes every key of every node.
	flush func(t *testing.T)
	// set sets key to val with a TTL on node i.
	set func(t *testing.T, i int, key, val string, ttl time.Duration)
	// pttl is Redis' PTTL of key on node i: -2 when missing, -1 without
	// expiry.
	pttl func(t *testing.T, i int, key string) int64
}

// redisFenceNodes starts three redis-servers.
func redisFenceNodes(t *testing.T) *fenceNodes {
	servers := redistest.StartServers(t, 3)
	f := &fenceNodes{
		flush: func(t *testing.T) {
			for _, s := range servers {
				if _, err := s.Do("FLUSHALL"); err != nil {
					t.Fatal(err)
				}
			}
		},
		set: func(t *testing.T, i int, key, val string, ttl time.Duration) {
			if _, err := servers[i].Do("SET", key, val, "PX", strconv.FormatInt(ttl.Milliseconds(), 10)); err != nil {
				t.Fatal(err)
			}
		},
		pttl: func(t *testing.T, i int, key string) int64 {
			v, err := servers[i].Do("PTTL", key)
			if err != nil {
				t.Fatal(err)
			}
			ms, _ := v.(int64)
			return ms
		},
	}
	for _, s := range servers {
		cfg, err := driver.ParseURL("redis://" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n := resp.NewNode(cfg)
		t.Cleanup(func() { n.Close() })
		f.nodes = append(f.nodes, n)
	}
	return f
}

// memFenceNodes makes three in-memory nodes.
func memFenceNodes(*testing.T) *fenceNodes {
	mem := []*Node{NewNode("a:1"), NewNode("b:1"), NewNode("c:1")}
	return &fenceNodes{
		nodes: []driver.Node{mem[0], mem[1], mem[2]},
		flush: func(*testing.T) {
			for _, n := range mem {
				n.FlushAll()
			}
		},
		set: func(_ *testing.T, i int, key, val string, ttl time.Duration) {
			mem[i].mu.Lock()
			defer mem[i].mu.Unlock()
			mem[i].keys[key] = entry{val: val, exp: time.Now().Add(ttl)}
		},
		pttl: func(_ *testing.T, i int, key string) int64 {
			mem[i].mu.Lock()
			defer mem[i].mu.Unlock()
			return mem[i].pttl(key)
		},
	}
}

// TestMemlockFenceExpiryMatchesRedis runs one sequence of fenced grants on
// three redis-servers and on three in-memory nodes, and checks that both
// behave as docs/fencing.md says: without WithFenceExpiry counters start
// from 0 and never expire; with it each grant gives the counters a TTL, a
// raise of diverged counters keeps it, and a counter lost (FlushAll) or
// expired starts again from the node's clock in microseconds, so tokens
// keep growing and a Fence admits every one of them.
func TestMemlockFenceExpiryMatchesRedis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		nodes func(t *testing.T) *fenceNodes
	}{
		{"redis", redisFenceNodes},
		{"memlock", memFenceNodes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const (
				ttl    = 2 * time.Second
				expiry = 2 * time.Second
				key    = "k"
			)
			counter := dlm.DefaultKeyPrefix + "{" + key + "}:fence"
			f := tc.nodes(t)
			m, err := dlm.New(f.nodes, dlm.WithFencing(), dlm.WithTTL(ttl), dlm.WithNodeTimeout(500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			var fence dlm.Fence
			// grant takes and releases the lock, and returns its token
			// once the lock's requests have ended on every node.
			grant := func(opts ...dlm.Option) uint64 {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				l, err := m.Lock(ctx, key, opts...)
				if err != nil {
					t.Fatalf("Lock: %v", err)
				}
				if err := fence.Admit(l.Token(), l.GrantID()); err != nil {
					t.Errorf("Fence.Admit(%d) = %v; want every grant's token admitted", l.Token(), err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				return l.Token()
			}
			// expiring checks that every node's counter has a TTL of at
			// most the expiry.
			expiring := func(when string) {
				t.Helper()
				for i := range f.nodes {
					if ms := f.pttl(t, i, counter); ms <= 0 || ms > expiry.Milliseconds() {
						t.Errorf("%s: node %d: counter PTTL %d; want a TTL of at most %v", when, i, ms, expiry)
					}
				}
			}
			withExpiry := dlm.WithFenceExpiry(expiry)

			if tok := grant(); tok != 1 {
				t.Errorf("first token without WithFenceExpiry = %d; want 1 (counters start from 0)", tok)
			}
			for i := range f.nodes {
				if ms := f.pttl(t, i, counter); ms != -1 {
					t.Errorf("without WithFenceExpiry: node %d: counter PTTL %d; want -1 (no expiry)", i, ms)
				}
			}
			if tok := grant(withExpiry); tok != 2 {
				t.Errorf("token with WithFenceExpiry after an existing counter = %d; want 2 (it counts on)", tok)
			}
			expiring("after a grant")

			f.flush(t)
			before := time.Now().UnixMicro()
			flushed := grant(withExpiry)
			if flushed <= uint64(before) {
				t.Errorf("token after FlushAll = %d; want more than the clock in µs before the grant, %d", flushed, before)
			}
			expiring("after FlushAll and a grant")
			next := grant(withExpiry)
			if next <= flushed || next >= uint64(time.Now().UnixMicro()) {
				t.Errorf("token after %d = %d; want it to count on, below the clock in µs", flushed, next)
			}

			// Counters diverged, as after grants that node 2 missed: every
			// quorum sees two counters above the third's, so the grant
			// raises the lower ones, keeping their TTL.
			f.set(t, 0, counter, strconv.FormatUint(next+1000, 10), expiry)
			f.set(t, 1, counter, strconv.FormatUint(next+2000, 10), expiry)
			raised := grant(withExpiry)
			if raised <= next+1000 {
				t.Errorf("token over diverged counters = %d; want more than %d", raised, next+1000)
			}
			expiring("after a raise")

			time.Sleep(expiry + 300*time.Millisecond)
			for i := range f.nodes {
				if ms := f.pttl(t, i, counter); ms != -2 {
					t.Errorf("after the fence expiry: node %d: counter PTTL %d; want -2 (gone)", i, ms)
				}
			}
			before = time.Now().UnixMicro()
			if tok := grant(withExpiry); tok <= raised || tok <= uint64(before) {
				t.Errorf("token after the counters expired = %d; want more than %d and than the clock in µs before the grant, %d", tok, raised, before)
			}
			expiring("after the counters expired and a grant")
		})
	}
}
