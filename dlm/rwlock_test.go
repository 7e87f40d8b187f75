package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// rwManager returns a manager over the nodes of srvs, closed when the test
// ends.
func rwManager(t *testing.T, nodes []driver.Node, opts ...dlm.ManagerOption) *dlm.Manager {
	t.Helper()
	m, err := dlm.New(nodes, append([]dlm.ManagerOption{dlm.WithNodeTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// wantErr fails t unless err wraps target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s = %v; want an error wrapping %v", what, err, target)
	}
}

// TestRWLockExclusion checks that readers share the lock, that a writer is
// refused while any reader holds it, that a reader is refused while the
// writer holds it, and that the keys are gone once everyone has left.
func TestRWLockExclusion(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	ctx := context.Background()
	m := rwManager(t, nodes)
	r1, err := m.RLock(ctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := m.TryRLock(ctx, "doc")
	if err != nil {
		t.Fatalf("TryRLock with a reader in = %v; want readers to share the lock", err)
	}
	if !r1.Shared() || !r2.Shared() || r1.Token() != 0 {
		t.Errorf("read locks: Shared() = %v, %v, Token() = %d; want true, true, 0", r1.Shared(), r2.Shared(), r1.Token())
	}
	_, err = m.TryLock(ctx, "doc")
	wantErr(t, "TryLock with two readers in", err, dlm.ErrNotObtained)
	if err := r1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = m.TryLock(ctx, "doc")
	wantErr(t, "TryLock with one reader in", err, dlm.ErrNotObtained)
	if err := r2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := m.TryLock(ctx, "doc", dlm.WithFencing())
	if err != nil {
		t.Fatalf("TryLock after the readers left = %v", err)
	}
	if w.Shared() || w.Token() == 0 {
		t.Errorf("write lock: Shared() = %v, Token() = %d; want false and a fencing token", w.Shared(), w.Token())
	}
	_, err = m.TryRLock(ctx, "doc")
	wantErr(t, "TryRLock with the writer in", err, dlm.ErrNotObtained)
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		keys, err := s.Do("KEYS", "redlock:{doc}*")
		if err != nil {
			t.Fatal(err)
		}
		if k, _ := keys.([]any); len(k) > 1 || (len(k) == 1 && k[0] != "redlock:{doc}:fence") {
			t.Errorf("node %d keeps %v after everyone left; want only the fencing counter", i, keys)
		}
	}
}

// TestRWLockWriterPreferred checks that a writer waiting for a reader keeps
// new readers out, gets the lock when the reader leaves, and lets readers in
// again once it is done: its release deletes its intent.
func TestRWLockWriterPreferred(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	ctx := context.Background()
	m := rwManager(t, nodes, dlm.WithRetry(0, dlm.FixedBackoff(20*time.Millisecond)))
	r, err := m.RLock(ctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *dlm.Lock, 1)
	go func() {
		w, err := m.Lock(ctx, "doc")
		if err != nil {
			t.Errorf("writer: Lock = %v", err)
		}
		got <- w
	}()
	awaitKey(t, srvs, "redlock:{doc}:wait", true)
	_, err = m.TryRLock(ctx, "doc")
	wantErr(t, "TryRLock while a writer waits", err, dlm.ErrNotObtained)
	if err := r.Extend(ctx, dlm.DefaultTTL); err != nil {
		t.Errorf("Extend of a reader already in while a writer waits = %v; want nil", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var w *dlm.Lock
	select {
	case w = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting writer did not get the lock within 5s of the last reader leaving")
	}
	if w == nil {
		t.FailNow()
	}
	// The intent lives until the writer's release, which deletes it.
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	awaitKey(t, srvs, "redlock:{doc}:wait", false)
	r, err = m.TryRLock(ctx, "doc")
	if err != nil {
		t.Fatalf("TryRLock after the writer left = %v", err)
	}
	r.Unlock(ctx)
}

// TestRWLockTryWriterLeavesNoIntent checks that a writer refused by TryLock
// does not keep readers out.
func TestRWLockTryWriterLeavesNoIntent(t *testing.T) {
	t.Parallel()
	_, nodes := startNodes(t, 3)
	ctx := context.Background()
	m := rwManager(t, nodes)
	r, err := m.RLock(ctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unlock(ctx)
	_, err = m.TryLock(ctx, "doc")
	wantErr(t, "TryLock with a reader in", err, dlm.ErrNotObtained)
	r2, err := m.TryRLock(ctx, "doc")
	if err != nil {
		t.Fatalf("TryRLock after a refused TryLock = %v; want the reader let in", err)
	}
	r2.Unlock(ctx)
}

// awaitKey waits until key exists (or is gone) on a majority of srvs.
func awaitKey(t *testing.T, srvs []*redistest.Server, key string, exists bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := 0
		for _, s := range srvs {
			v, err := s.Do("EXISTS", key)
			if err != nil {
				t.Fatal(err)
			}
			if (v == int64(1)) == exists {
				n++
			}
		}
		if n > len(srvs)/2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("EXISTS %s: want %v on a majority within 5s; %d of %d", key, exists, n, len(srvs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRWLockCrashedReader checks that a reader that never unlocks keeps the
// writer out until its TTL ends, and no longer, even when other readers
// with shorter leases came and went.
func TestRWLockCrashedReader(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	ctx := context.Background()
	nt := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
	m := rwManager(t, nodes, dlm.WithNodeTimeout(nt))
	ttl := 5 * nt // its quarter above the node timeout
	taken := time.Now()
	if _, err := m.TryRLock(ctx, "doc", dlm.WithTTL(ttl)); err != nil { // never unlocked: a crash
		t.Fatal(err)
	}
	r, err := m.TryRLock(ctx, "doc", dlm.WithTTL(ttl/4))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = m.TryLock(ctx, "doc")
	if time.Since(taken) < ttl-ttl/4 {
		wantErr(t, "TryLock while a crashed reader's lease lasts", err, dlm.ErrNotObtained)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*ttl)
	defer cancel()
	w, err := m.Lock(wctx, "doc")
	if err != nil {
		t.Fatalf("Lock after the crashed reader's TTL = %v", err)
	}
	if d := time.Since(taken); d < ttl {
		t.Errorf("the writer got the lock %v after the crashed reader's grant; want no sooner than its TTL %v", d, ttl)
	}
	w.Unlock(ctx)
}

// TestRWLockAutoExtendAndLoss checks that a read lease kept by
// auto-extension outlives its TTL, and that its loss on the nodes is
// signalled by Lost and cancels RDo's function.
func TestRWLockAutoExtendAndLoss(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	ctx := context.Background()
	// A TTL long enough for extensions to succeed on a loaded machine:
	// five node timeouts of 200ms stretched to the pace measured on the run.
	nt := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
	m := rwManager(t, nodes, dlm.WithNodeTimeout(nt))
	ttl := 5 * nt
	err := m.RDo(ctx, "doc", func(ctx context.Context) error {
		time.Sleep(ttl * 5 / 2)
		if _, err := m.TryLock(context.Background(), "doc"); !errors.Is(err, dlm.ErrNotObtained) {
			return fmt.Errorf("TryLock after 2.5 TTLs of an extended read lease = %v; want ErrNotObtained", err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("RDo's context ended while the lease was extended: %v", context.Cause(ctx))
		}
		for _, s := range srvs { // every reader gone: the lease is lost
			if _, err := s.Do("DEL", "redlock:{doc}", "redlock:{doc}:readers"); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), dlm.ErrLockLost) {
				return fmt.Errorf("cause = %v; want ErrLockLost", context.Cause(ctx))
			}
			return nil
		case <-time.After(5 * ttl):
			return errors.New("RDo's context not cancelled within 5 TTLs of the lease's loss")
		}
	}, dlm.WithTTL(ttl))
	wantErr(t, "RDo after the lease was lost", err, dlm.ErrLockLost)
	if err != nil && !errors.Is(err, dlm.ErrLockLost) {
		t.Fatal(err)
	}
}

// TestRWLockUpgradeRefused checks that a write lock asked for with RDo's
// context, and a read lock asked for with Do's, are refused at once.
func TestRWLockUpgradeRefused(t *testing.T) {
	t.Parallel()
	_, nodes := startNodes(t, 3)
	ctx := context.Background()
	m := rwManager(t, nodes)
	err := m.RDo(ctx, "doc", func(ctx context.Context) error {
		// Bounded, so that without the refusal the test fails rather
		// than waits for its own read lock.
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := m.Lock(ctx, "doc")
		wantErr(t, "Lock inside RDo", err, dlm.ErrUpgrade)
		wantErr(t, "Lock inside RDo", err, dlm.ErrInvalid)
		err = m.Do(ctx, "doc", func(context.Context) error { return nil })
		wantErr(t, "Do inside RDo", err, dlm.ErrUpgrade)
		l, err := m.TryLock(ctx, "other")
		if err != nil {
			t.Errorf("TryLock of another key inside RDo = %v", err)
		} else {
			l.Unlock(ctx)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Do(ctx, "doc", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := m.RLock(ctx, "doc")
		wantErr(t, "RLock inside Do", err, dlm.ErrInvalid)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
