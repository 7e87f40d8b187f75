package dlm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

func TestKeySlot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		want uint16
	}{
		// Values from CLUSTER KEYSLOT on Redis 7.0.
		{"foo", 12182},
		{"bar", 5061},
		{"a", 15495},
		{"b", 3300},
		{"123456789", 12739},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", 8363},    // empty tag: the whole key
		{"foo{{bar}}zap", 4015}, // tag "{bar"
		{"foo{bar}{zap}", 5061}, // tag "bar"
	} {
		if got := keySlot(tc.key); got != tc.want {
			t.Errorf("keySlot(%q) = %d; want %d", tc.key, got, tc.want)
		}
	}
}

// shardedNode is a fake node that says it is a Redis Cluster.
type shardedNode struct{ *fakeNode }

func (shardedNode) Sharded() bool { return true }

var _ driver.Sharded = shardedNode{}

// TestMultiKeyAcrossSlotsOnCluster checks that a lock over keys in
// different hash slots is refused with ErrInvalid, naming the cause and
// sending nothing, when a node is a Redis Cluster; that keys sharing a tag
// are locked; and that a manager of plain nodes takes any keys.
func TestMultiKeyAcrossSlotsOnCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := newFakes(3)
	nodes := asNodes(fs)
	nodes[1] = shardedNode{fs[1]}
	m, err := New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, call := range []func() (*Lock, error){
		func() (*Lock, error) { return m.TryLockAll(ctx, []string{"a", "b"}) },
		func() (*Lock, error) { return m.LockAll(ctx, []string{"a", "b"}) },
	} {
		_, err := call()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "hash slot") || !strings.Contains(err.Error(), fs[1].Addr()) {
			t.Errorf("lock over keys in two slots = %v; want ErrInvalid naming the slots and the cluster node", err)
		}
		if errors.Is(err, ErrUnavailable) {
			t.Errorf("lock over keys in two slots = %v; must not read as unavailable", err)
		}
	}
	if n := countAll(fs, "acquire"); n != 0 {
		t.Errorf("refused lock sent %d acquire scripts; want none", n)
	}
	l, err := m.TryLockAll(ctx, []string{"{order42}:a", "{order42}:b"})
	if err != nil {
		t.Fatalf("TryLockAll of keys sharing a tag: %v", err)
	}
	l.Unlock(ctx)

	plain := newManager(t, newFakes(3))
	l, err = plain.TryLockAll(ctx, []string{"a", "b"})
	if err != nil {
		t.Fatalf("TryLockAll over plain nodes: %v", err)
	}
	l.Unlock(ctx)
}

// flagNode records the last argument (announce's flag) of the scripts it
// runs.
type flagNode struct {
	*fakeNode
	sharded bool
	flags   chan string
}

func (f flagNode) Sharded() bool { return f.sharded }

func (f flagNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if s == script.Release {
		f.flags <- args[len(args)-1]
	}
	return f.fakeNode.Eval(ctx, s, keys, args)
}

// TestAnnounceFlagOnCluster checks that a release asks a node that is a
// Redis Cluster to announce with flag "2" (SPUBLISH, on shard channels) and
// a plain node with "1", and that every node announces: each names the
// waiter it hands the key to, and a waiter counts the nodes that did.
func TestAnnounceFlagOnCluster(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	nodes := []flagNode{{fs[0], true, make(chan string, 1)}, {fs[1], false, make(chan string, 1)}, {fs[2], false, make(chan string, 1)}}
	m, err := New([]driver.Node{nodes[0], nodes[1], nodes[2]})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	loud := 0
	for i, n := range nodes {
		got := <-n.flags
		want := "1"
		if n.sharded {
			want = "2"
		}
		if got != "0" {
			loud++
		}
		if got != want {
			t.Errorf("node %d (sharded %v) released with announce flag %q; want %q", i, n.sharded, got, want)
		}
	}
	if loud != len(nodes) {
		t.Errorf("%d nodes announced the release; want %d", loud, len(nodes))
	}
}

// TestClusterKeyStartingWithBraceRefused checks that every call naming a
// key that begins with "}" is refused with ErrInvalid, saying why and
// sending nothing, when a node is a Redis Cluster: the key's Redis key
// "redlock:{}...}" would have an empty hash tag, so the keys derived from it
// (":fence", ":wake", ...) would hash to other slots than the lock's. A
// manager of plain nodes, which has no slots, takes such a key.
func TestClusterKeyStartingWithBraceRefused(t *testing.T) {
	t.Parallel()
	// A bound for the calls that wait, should the key be taken for a
	// valid one: the fakes do not run the read lock's scripts.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	fs := newFakes(3)
	nodes := asNodes(fs)
	nodes[1] = shardedNode{fs[1]}
	m, err := New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	noop := func(context.Context) error { return nil }
	lockErr := func(_ *Lock, err error) error { return err }
	for _, tc := range []struct {
		name string
		key  string
		call func(key string) error
	}{
		{"TryLock", "}k", func(k string) error { return lockErr(m.TryLock(ctx, k)) }},
		{"Lock", "}", func(k string) error { return lockErr(m.Lock(ctx, k)) }},
		{"TryLockAll", "}k", func(k string) error { return lockErr(m.TryLockAll(ctx, []string{k})) }},
		{"LockAll", "}}k", func(k string) error { return lockErr(m.LockAll(ctx, []string{k})) }},
		{"Do", "}k", func(k string) error { return m.Do(ctx, k, noop) }},
		{"DoAll", "}k", func(k string) error { return m.DoAll(ctx, []string{k}, noop) }},
		{"TryRLock", "}k", func(k string) error { return lockErr(m.TryRLock(ctx, k)) }},
		{"RLock", "}k", func(k string) error { return lockErr(m.RLock(ctx, k)) }},
		{"RDo", "}k", func(k string) error { return m.RDo(ctx, k, noop) }},
		{"Status", "}k", func(k string) error { _, err := m.Status(ctx, k); return err }},
		{"Semaphore", "}k", func(k string) error { _, err := m.Semaphore(k, 2); return err }},
		{"Election", "}k", func(k string) error { _, err := m.Election(k); return err }},
		{"Resume", "}k", func(k string) error {
			secret, err := newSecret()
			if err != nil {
				return err
			}
			return lockErr(m.Resume(ctx, Handle{Keys: []string{k}, Secret: secret, Until: time.Now().Add(time.Second)}))
		}},
	} {
		err := tc.call(tc.key)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `begins with "}"`) ||
			!strings.Contains(err.Error(), "hash tag") || !strings.Contains(err.Error(), fs[1].Addr()) {
			t.Errorf("%s(%q) on a cluster node = %v; want ErrInvalid saying the key begins with \"}\", its hash tag and the cluster node", tc.name, tc.key, err)
		}
	}
	if n := countAll(fs, ""); n != 0 {
		t.Errorf("the refused calls sent %d requests; want none", n)
	}

	plain := newManager(t, newFakes(3))
	l, err := plain.TryLock(context.Background(), "}k")
	if err != nil {
		t.Fatalf("TryLock(\"}k\") over plain nodes: %v", err)
	}
	l.Unlock(context.Background())
}

// TestNodeArgsOnCluster checks the flag a node that is a Redis Cluster
// sends: Sharded for a request it announces, QuietSharded for one it does
// not (so that the listeners a refusal counts are the shard channels'),
// with a waiting writer's mark kept; a request without a flag unchanged.
// A node that is one master sends the flags as they are.
func TestNodeArgsOnCluster(t *testing.T) {
	t.Parallel()
	cluster, master := &node{i: 1, cluster: true}, &node{i: 1}
	announced := func(f script.Flag, loud uint64) *round.Request {
		req := &round.Request{Args: []string{"secret"}}
		req.Announce(f, loud)
		return req
	}
	for _, tc := range []struct {
		name            string
		req             *round.Request
		cluster, master string // the last argument sent
	}{
		{"quiet", announced(script.Flag{}, 0), script.Flag{Mode: script.QuietSharded}.Arg(), script.Flag{}.Arg()},
		{"quiet, writer waits", announced(script.Flag{WriterWaits: true}, 0), script.Flag{Mode: script.QuietSharded, WriterWaits: true}.Arg(), script.Flag{WriterWaits: true}.Arg()},
		{"loud here", announced(script.Flag{Mode: script.Loud}, 1<<1), script.Flag{Mode: script.Sharded}.Arg(), script.Flag{Mode: script.Loud}.Arg()},
		{"loud elsewhere", announced(script.Flag{Mode: script.Loud}, 1<<0), script.Flag{Mode: script.QuietSharded}.Arg(), script.Flag{}.Arg()},
		{"no flag", &round.Request{Args: []string{"secret", "1000"}}, "1000", "1000"},
	} {
		for _, n := range []struct {
			n    *node
			want string
		}{{cluster, tc.cluster}, {master, tc.master}} {
			args := nodeArgs(n.n)(tc.req)
			if got := args[len(args)-1]; got != n.want {
				t.Errorf("%s, cluster %v: last argument %q; want %q", tc.name, n.n.cluster, got, n.want)
			}
		}
	}
}
