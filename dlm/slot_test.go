package dlm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
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
	if s == releaseScript {
		f.flags <- args[len(args)-1]
	}
	return f.fakeNode.Eval(ctx, s, keys, args)
}

// TestAnnounceFlagOnCluster checks that a release asks a node that is a
// Redis Cluster to announce with flag "2" (publish without counting local
// subscribers) and a plain node with "1".
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
			if got != want {
				t.Errorf("node %d (sharded %v) released with announce flag %q; want %q or \"0\"", i, n.sharded, got, want)
			}
		}
	}
	if loud != 2 {
		t.Errorf("%d nodes announced the release; want 2", loud)
	}
}
