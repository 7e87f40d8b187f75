package dlm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/memlock"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// Handles that did not come from a Lock, on real redis-servers: a Handle
// from another process is untrusted input (docs/security.md).

// TestResumeRejectsForgedReaderMarker checks that a Handle whose secret is
// the readers' marker, the public value of a key that readers hold, does
// not resume (ErrInvalid), as a mutex or as a read lock: the reader keeps
// its lease, and a writer is still kept out.
func TestResumeRejectsForgedReaderMarker(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	readers := redisManager(t, srvs)
	service := redisManager(t, srvs)
	ctx := context.Background()
	reader, err := readers.TryRLock(ctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range []string{"", "read"} {
		h := dlm.Handle{Keys: []string{"doc"}, Secret: dlm.ReadersMark, Until: time.Now().Add(time.Second), Lease: lease}
		l, err := service.Resume(ctx, h)
		if !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("Resume(Handle with the readers' marker as secret, lease %q) = a lock: %t, %v; want ErrInvalid", lease, l != nil, err)
		}
		if l != nil {
			// What a service that trusted the Handle would do next.
			if err := l.Unlock(ctx); err != nil {
				t.Logf("Unlock() of the forged lock = %v", err)
			}
		}
	}
	if _, err := service.TryLock(ctx, "doc"); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("a writer's TryLock while the reader holds the key = %v; want ErrNotObtained", err)
	}
	if err := reader.Extend(ctx, dlm.DefaultTTL); err != nil {
		t.Errorf("the reader's Extend after the forged Handles = %v; want nil", err)
	}
	if err := reader.Unlock(ctx); err != nil {
		t.Errorf("the reader's Unlock = %v", err)
	}
}

// TestScriptsRefuseReaderMarker runs every script that takes a holder's
// secret, with the readers' marker as that secret, while a reader holds the
// key, on a real redis-server and on memlock's node, which must answer
// alike: each script answers as it would a stranger (0) and changes
// nothing, the reader keeps its lease, and a writer is still kept out.
func TestScriptsRefuseReaderMarker(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	srvs, nodes := startNodes(t, 1)
	for _, tc := range []struct {
		name  string
		node  driver.Node
		redis *redistest.Server // nil: memlock
	}{
		{"redis-server", nodes[0], srvs[0]},
		{"memlock", memlock.NewNode("mem-0:6379"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m, err := dlm.New([]driver.Node{tc.node}, dlm.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			reader, err := m.TryRLock(ctx, "doc")
			if err != nil {
				t.Fatal(err)
			}
			const k = "redlock:{doc}"
			for _, c := range dlm.ForgedCalls(k, dlm.ReadersMark) {
				got, err := tc.node.Eval(ctx, c.Script, c.Keys, c.Args)
				if err != nil || !refused(got) {
					t.Errorf("%s script with the readers' marker as secret = %v, %v; want 0", c.Name, got, err)
				}
				if tc.redis == nil {
					continue
				}
				v, err := tc.redis.Do("GET", k)
				if err != nil {
					t.Fatal(err)
				}
				ms, err := tc.redis.Do("PTTL", k)
				if err != nil {
					t.Fatal(err)
				}
				if v != dlm.ReadersMark || ms.(int64) > ttl.Milliseconds() {
					t.Errorf("after the %s script with the readers' marker, %s = %v with PTTL %vms; want %q, its TTL at most %v", c.Name, k, v, ms, dlm.ReadersMark, ttl)
				}
			}
			if _, err := m.TryLock(ctx, "doc"); !errors.Is(err, dlm.ErrNotObtained) {
				t.Errorf("a writer's TryLock while the reader holds the key = %v; want ErrNotObtained", err)
			}
			if err := reader.Extend(ctx, ttl); err != nil {
				t.Errorf("the reader's Extend after the forged calls = %v; want nil", err)
			}
			if err := reader.Unlock(ctx); err != nil {
				t.Errorf("the reader's Unlock = %v", err)
			}
		})
	}
}

// refused says whether a script's reply is a refusal: 0, an array that
// starts with 0 (the fair acquire's), or an empty array (the read fence's).
func refused(reply any) bool {
	if a, ok := reply.([]any); ok {
		if len(a) == 0 {
			return true
		}
		reply = a[0]
	}
	return reply == int64(0)
}

// TestResumeCapsUntilAtTTL checks that a Handle cannot stretch a lock's
// validity beyond what its TTL can give: resumed from a Handle whose Until
// is an hour away, with a TTL of a second and auto-extension, the lock's
// Until is at most a TTL away, and once its keys are gone from every node,
// the lock is reported lost within a few TTLs instead of an hour.
func TestResumeCapsUntilAtTTL(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	srvs := redistest.StartServers(t, 3)
	// The node timeout derived from a TTL of a second, 50 ms, is less than a
	// first dial can take on a loaded machine: take the largest one derived
	// for any TTL, and let Lock try again if an attempt fails all the same.
	orig := redisManager(t, srvs, dlm.WithTTL(ttl), dlm.WithNodeTimeout(ttl/4))
	m := redisManager(t, srvs, dlm.WithTTL(ttl), dlm.WithNodeTimeout(ttl/4))
	ctx := context.Background()
	lctx, cancel := context.WithTimeout(ctx, 20*ttl)
	defer cancel()
	l, err := orig.Lock(lctx, "capped")
	if err != nil {
		t.Fatal(err)
	}
	h := l.Handle()
	h.Until = time.Now().Add(time.Hour)
	r, err := m.Resume(ctx, h, dlm.WithAutoExtend(dlm.AutoExtend{}))
	if err != nil {
		t.Fatalf("Resume(Handle with Until an hour away) = %v", err)
	}
	defer r.Unlock(ctx)
	if left := time.Until(r.Until()); left > ttl {
		t.Errorf("Resume(Handle with Until an hour away).Until() = now + %v; want at most the TTL, %v", left, ttl)
	}
	// The keys vanish from every node, as when they expire or a node
	// loses them.
	for i, s := range srvs {
		if _, err := s.Do("DEL", "redlock:{capped}"); err != nil {
			t.Fatalf("DEL on node %d: %v", i, err)
		}
	}
	// Bound: the validity, the extensions' node timeouts, and margin.
	timer := time.NewTimer(10 * ttl)
	defer timer.Stop()
	select {
	case <-r.Lost():
	case <-timer.C:
		t.Fatalf("Lost() still open %v after the keys left every node; Until() = now + %v", 10*ttl, time.Until(r.Until()))
	}
	if left := time.Until(r.Until()); left > ttl {
		t.Errorf("Until() after the loss = now + %v; want at most the TTL, %v", left, ttl)
	}
}
