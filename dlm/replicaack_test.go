package dlm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

func TestReplicaAckInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []ManagerOption
		want string
	}{
		{"no replicas", []ManagerOption{WithReplicaAck(0, 10*time.Millisecond)}, "at least 1"},
		{"WAIT 0", []ManagerOption{WithReplicaAck(1, 0)}, "WAIT 0"},
		{"timeout over the node timeout", []ManagerOption{WithNodeTimeout(50 * time.Millisecond), WithReplicaAck(1, 50*time.Millisecond)}, "node timeout"},
		{"node without driver.ReplicaAcker", []ManagerOption{WithReplicaAck(1, 10*time.Millisecond)}, "ReplicaAcker"},
	} {
		_, err := New(asNodes(newFakes(3)), tc.opts...)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v; want ErrInvalid about %q", tc.name, err, tc.want)
		}
	}
}

// TestAckedScripts checks which scripts WithReplicaAck waits for: every
// grant and extension, of locks, read locks and permits, and the raise of
// fencing counters; not releases, the line's departures or inspections.
func TestAckedScripts(t *testing.T) {
	t.Parallel()
	m, err := New(asNodes(newFakes(1)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sem, err := m.Semaphore("s", 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.cfg
	grants := map[string]*request{
		"lock":   acquireRequest(&cfg, []string{"k"}, "t", nil, false),
		"read":   readLease.acquireRequest(&cfg, readLease.keys("k"), "t"),
		"permit": sem.kind.acquireRequest(&cfg, sem.kind.keys("s"), "t"),
	}
	guarded := cfg
	guarded.restartGuard = time.Second
	grants["guarded read"] = readLease.acquireRequest(&guarded, readLease.keys("k"), "t")
	grants["guarded permit"] = sem.kind.acquireRequest(&guarded, sem.kind.keys("s"), "t")
	for name, req := range grants {
		if !acked(req) {
			t.Errorf("acked(%s grant) = false; want true", name)
		}
	}
	for name, l := range map[string]*Lock{
		"lock":   {m: m, claim: claim{rkeys: []string{"k"}}},
		"read":   {m: m, claim: claim{rkeys: readLease.keys("k"), kind: readLease}},
		"permit": {m: m, claim: claim{rkeys: sem.kind.keys("s"), kind: sem.kind}},
	} {
		if req := l.extendRequest(&cfg, time.Second); !acked(req) {
			t.Errorf("acked(%s extension) = false; want true", name)
		}
	}
	for _, s := range []*driver.Script{acquireScripts[3], script.RaiseFence} {
		if !acked(&request{Script: s}) {
			t.Errorf("acked(script %.8s) = false; want true", s.Hash)
		}
	}
	for _, s := range []*driver.Script{script.Release, script.ReadRelease, script.PermitRelease, script.Leave, script.Status, script.Leader} {
		if acked(&request{Script: s}) {
			t.Errorf("acked(script %.8s) = true; want false: it grants nothing", s.Hash)
		}
	}
}
