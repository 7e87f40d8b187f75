package dlm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

func TestKeySlot(t *testing.T) {
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
