package dlm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/memlock"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// Item 2 of the security review: a Handle's fencing token is untrusted, so
// Resume takes it from the nodes, on real redis-servers.

// TestResumeTokenFromNodes checks that Resume gives a lock the fencing
// token its grant settled on the nodes, or refuses the Handle: a genuine
// fenced Handle resumes with its token and grant id; a Handle whose token
// disagrees with what a quorum of nodes' counters hold while the keys hold
// the secret is refused with ErrInvalid, among them the forged 2^62 that
// would have made a Fence refuse every later grant, and an unfenced lock's
// Handle forged to carry a token; a token of 2^53 or more, a token on a
// lease, and a fenced Handle resumed without WithFencing are refused too; a
// fenced lock's Handle with no token resumes with token 0; and a Handle
// whose keys a quorum no longer holds is lost.
func TestResumeTokenFromNodes(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	fenced := redisManager(t, srvs, dlm.WithFencing())
	plain := redisManager(t, srvs)
	resumer := redisManager(t, srvs, dlm.WithFencing())
	plainResumer := redisManager(t, srvs)
	ctx := context.Background()
	type tc struct {
		name string
		// take obtains the lock the Handle is made from.
		take func(t *testing.T, key string) *dlm.Lock
		// forge changes the Handle, as a hostile client would.
		forge func(h *dlm.Handle, l *dlm.Lock)
		// before runs on the nodes once the Handle is made.
		before func(t *testing.T, key string)
		m      *dlm.Manager
		opts   []dlm.Option
		want   error // nil: resumed
		// token is the resumed lock's Token, when resumed; -1 for the
		// original's.
		token int64
	}
	takeFenced := func(t *testing.T, key string) *dlm.Lock {
		t.Helper()
		l, err := fenced.TryLock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	takePlain := func(t *testing.T, key string) *dlm.Lock {
		t.Helper()
		l, err := plain.TryLock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// takeThird is the third fenced grant of key: token 3 on every node.
	takeThird := func(t *testing.T, key string) *dlm.Lock {
		t.Helper()
		for range 2 {
			if err := takeFenced(t, key).Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return takeFenced(t, key)
	}
	setToken := func(tok uint64) func(*dlm.Handle, *dlm.Lock) {
		return func(h *dlm.Handle, _ *dlm.Lock) { h.Token = tok }
	}
	for _, c := range []tc{
		{name: "genuine fenced Handle", take: takeThird, m: resumer, token: -1},
		{name: "genuine fenced Handle, WithFencing on the call", take: takeThird, m: plainResumer, opts: []dlm.Option{dlm.WithFencing()}, token: -1},
		{name: "fenced Handle forged to 2^62", take: takeFenced, forge: setToken(1 << 62), m: resumer, want: dlm.ErrInvalid},
		{name: "fenced Handle forged one above", take: takeThird, forge: setToken(4), m: resumer, want: dlm.ErrInvalid},
		{name: "fenced Handle forged one below", take: takeThird, forge: setToken(2), m: resumer, want: dlm.ErrInvalid},
		{name: "fenced Handle forged to 2^53", take: takeFenced, forge: setToken(1 << 53), m: resumer, want: dlm.ErrInvalid},
		{name: "fenced Handle forged to 2^64-1", take: takeFenced, forge: setToken(1<<64 - 1), m: resumer, want: dlm.ErrInvalid},
		{name: "unfenced lock forged to 99, resumed with fencing", take: takePlain, forge: setToken(99), m: resumer, want: dlm.ErrInvalid},
		{name: "unfenced lock forged to 99, resumed without fencing", take: takePlain, forge: setToken(99), m: plainResumer, want: dlm.ErrInvalid},
		{name: "fenced Handle resumed without fencing", take: takeThird, m: plainResumer, want: dlm.ErrInvalid},
		{name: "fenced Handle without its token", take: takeThird, forge: setToken(0), m: resumer, token: 0},
		{name: "unfenced Handle resumed with fencing", take: takePlain, m: resumer, token: 0},
		{name: "read lock with a token", take: func(t *testing.T, key string) *dlm.Lock {
			t.Helper()
			l, err := fenced.TryRLock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, forge: setToken(1), m: resumer, want: dlm.ErrInvalid},
		{name: "keys gone from a quorum", take: takeThird, m: resumer, want: dlm.ErrLockLost, before: func(t *testing.T, key string) {
			for _, s := range srvs[:2] {
				if _, err := s.Do("DEL", "redlock:{"+key+"}"); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "keys held by another on a quorum", take: takeThird, m: resumer, want: dlm.ErrLockLost, before: func(t *testing.T, key string) {
			for _, s := range srvs[1:] {
				if _, err := s.Do("SET", "redlock:{"+key+"}", strings.Repeat("B", 22), "PX", "60000"); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := strings.ReplaceAll(t.Name(), " ", "_")
			l := c.take(t, key)
			h := l.Handle()
			if c.forge != nil {
				c.forge(&h, l)
			}
			if c.before != nil {
				c.before(t, key)
			}
			// As a service receives it: JSON from another process.
			b, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			var got dlm.Handle
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			r, err := c.m.Resume(ctx, got, c.opts...)
			if c.want != nil {
				if r != nil || !errors.Is(err, c.want) {
					t.Errorf("Resume(Handle with token %d of a lock granted token %d) = a lock with token %d, %v; want %v",
						got.Token, l.Token(), r.Token(), err, c.want)
				}
				if r != nil {
					r.Unlock(ctx)
				}
				l.Unlock(ctx)
				return
			}
			if err != nil {
				t.Fatalf("Resume(Handle with token %d of a lock granted token %d) = %v; want a lock", got.Token, l.Token(), err)
			}
			want := uint64(c.token)
			if c.token < 0 {
				want = l.Token()
			}
			wantID := l.GrantID()
			if want == 0 {
				wantID = 0
			}
			if r.Token() != want || r.GrantID() != wantID {
				t.Errorf("Resume(Handle with token %d).Token(), GrantID() = %d, %d; want %d, %d", got.Token, r.Token(), r.GrantID(), want, wantID)
			}
			if err := r.Extend(ctx, time.Minute); err != nil {
				t.Errorf("Extend() of the resumed lock = %v", err)
			}
			if err := r.Unlock(ctx); err != nil {
				t.Errorf("Unlock() of the resumed lock = %v", err)
			}
		})
	}
}

// TestResumeForgedTokenKeepsFence plays the forged Handle of the security
// review through to the protected resource: a lock granted token 1 is
// resumed from a Handle that claims 2^62. Resume must refuse it; had it
// been resumed, a Fence that admitted its token would refuse every later
// grant with ErrStaleToken. The holder's writes and the next real grant's
// are admitted.
func TestResumeForgedTokenKeepsFence(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	m := redisManager(t, srvs, dlm.WithFencing())
	attacker := redisManager(t, srvs, dlm.WithFencing())
	ctx := context.Background()
	var fence dlm.Fence
	l, err := m.TryLock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.Admit(l.Token(), l.GrantID()); err != nil {
		t.Fatalf("Admit(the holder's token %d) = %v", l.Token(), err)
	}
	h := l.Handle()
	h.Token = 1 << 62
	forged, err := attacker.Resume(ctx, h)
	if forged != nil {
		// What the attacker does with it: one write through the fence.
		t.Errorf("Resume(Handle forged to token 2^62) = a lock with token %d; want ErrInvalid", forged.Token())
		fence.Admit(forged.Token(), forged.GrantID())
	} else if !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("Resume(Handle forged to token 2^62) = %v; want ErrInvalid", err)
	}
	if err := fence.Admit(l.Token(), l.GrantID()); err != nil {
		t.Errorf("the holder's second write: Admit(%d) = %v; want admitted", l.Token(), err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := m.TryLock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer next.Unlock(ctx)
	if err := fence.Admit(next.Token(), next.GrantID()); err != nil {
		t.Errorf("the next grant: Admit(%d) = %v; want admitted (the fence's largest is %d)", next.Token(), err, fence.Last())
	}
	if fence.Last() >= 1<<53 {
		t.Errorf("Fence.Last() = %d; want a token below 2^53", fence.Last())
	}
}

// TestResumeTokenRaisedCounters checks that a genuine Handle resumes with
// its token when the nodes' counters had diverged and the grant raised them
// (docs/fencing.md, phase 2), and that one forged to a counter some node
// holds, but not a quorum, is refused.
func TestResumeTokenRaisedCounters(t *testing.T) {
	t.Parallel()
	c := newFencingCluster(t)
	ctx := context.Background()
	c.do(t, []int{0}, "SET", fencePrefix+"{k}:fence", "41")
	c.do(t, []int{1}, "SET", fencePrefix+"{k}:fence", "77")
	c.do(t, []int{3, 4}, "SET", fencePrefix+"{k}", "someone-else", "PX", "60000")
	before := c.mark()
	l, err := c.m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	if l.Token() != 78 {
		t.Fatalf("token = %d; want 78 (node 1's counter + 1)", l.Token())
	}
	// The grant returned at a quorum: let every node's acquire end first.
	c.settle(t, before, 1, 0, 1, 2, 3, 4)
	mark := c.mark()
	r, err := c.m.Resume(ctx, l.Handle())
	if err != nil {
		t.Fatalf("Resume(the genuine Handle of token 78) = %v", err)
	}
	if r.Token() != 78 || r.GrantID() != l.GrantID() {
		t.Errorf("resumed Token(), GrantID() = %d, %d; want 78, %d", r.Token(), r.GrantID(), l.GrantID())
	}
	// One round trip: one read on each node.
	c.settle(t, mark, 1, 0, 1, 2, 3, 4)
	for i, got := range c.mark() {
		if got-mark[i] != 1 {
			t.Errorf("Resume sent %d requests to node %d; want 1", got-mark[i], i)
		}
	}
	// Node 3 alone is raised to 1000 while someone else holds the key
	// there: a counter of one node is not a quorum's.
	c.do(t, []int{3}, "SET", fencePrefix+"{k}:fence", "1000")
	h := l.Handle()
	h.Token = 1000
	if r, err := c.m.Resume(ctx, h); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("Resume(Handle forged to one node's counter) = a lock: %t, %v; want ErrInvalid", r != nil, err)
	}
}

// TestResumeTokenUnavailable checks, on memlock's nodes, that a fenced
// Handle does not resume when too many nodes fail to tell its counters
// (ErrUnavailable), and that it does once they answer again.
func TestResumeTokenUnavailable(t *testing.T) {
	t.Parallel()
	nodes := []*memlock.Node{memlock.NewNode("mem-0:6379"), memlock.NewNode("mem-1:6379"), memlock.NewNode("mem-2:6379")}
	dn := make([]driver.Node, len(nodes))
	for i, n := range nodes {
		dn[i] = n
	}
	m := rwManager(t, dn, dlm.WithFencing())
	ctx := context.Background()
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	// The grant returned at a quorum: let the third node's acquire land.
	waitUntil(t, "the key on every node", func() bool {
		st, err := m.Status(ctx, "k")
		held := err == nil
		for _, s := range st {
			held = held && s.Held
		}
		return held
	})
	nodes[1].SetDown(true)
	nodes[2].SetDown(true)
	r, err := m.Resume(ctx, l.Handle())
	if r != nil || !errors.Is(err, dlm.ErrUnavailable) || errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Resume(fenced Handle) with 2 of 3 nodes down = a lock: %t, %v; want ErrUnavailable", r != nil, err)
	}
	var nerr *dlm.NodeError
	if !errors.As(err, &nerr) {
		t.Errorf("Resume(fenced Handle) with 2 of 3 nodes down = %v; want the nodes' errors", err)
	}
	nodes[1].SetDown(false)
	r, err = m.Resume(ctx, l.Handle())
	if err != nil || r.Token() != l.Token() {
		t.Errorf("Resume(fenced Handle) with 1 of 3 nodes down = %v, token %d; want token %d", err, r.Token(), l.Token())
	}
}
