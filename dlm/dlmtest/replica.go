package dlmtest

import (
	"context"
	"errors"
	"github.com/dlmgo/redlock/dlm/redistest"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// TestReplicaAck checks [dlm.WithReplicaAck] through dial on a master with
// one replica: grants and extensions count once the replica acknowledged
// them, and the replica holds the key; with the replica paused, or asking
// for two replicas, the node fails with [dlm.ErrReplicaAck] and the
// attempt is released; given to one call, the option fails with
// [dlm.ErrInvalid]. Read locks and semaphore permits are granted and
// extended under the same acknowledgement as locks, and so is the
// auto-extension, whose batches wait for the replica too.
//
// The acknowledgement's timeout (1 s on a quiet machine) is stretched to
// the pace measured through the master and the replica, so that a healthy
// replica's late acknowledgement on a busy machine is not taken for a
// missing one; the node timeout and the TTL follow it.
func TestReplicaAck(t *testing.T, dial Dial) {
	master := redistest.StartServer(t)
	replica := redistest.StartReplica(t, master)
	pace := redistest.MeasurePace(t, master).Max(redistest.MeasurePace(t, replica))
	ack := pace.Stretch(time.Second)
	timeout := max(3*time.Second, 3*ack)
	t.Logf("pace %v: replica ack timeout %v, node timeout %v", pace, ack, timeout)
	n := dial(t, master.Addr())
	defer n.Close()
	ctx := context.Background()
	newManager := func(replicas int) *dlm.Manager {
		t.Helper()
		m, err := dlm.New([]driver.Node{n}, dlm.WithKeyPrefix(suitePrefix), dlm.WithTTL(max(10*time.Second, 3*timeout)),
			dlm.WithNodeTimeout(timeout), dlm.WithReplicaAck(replicas, ack), dlm.WithRetry(1, nil))
		if err != nil {
			t.Fatalf("dlm.New with WithReplicaAck: %v", err)
		}
		return m
	}
	m := newManager(1)
	defer m.Close()
	l, err := m.TryLock(ctx, "acked", dlm.WithFencing())
	if err != nil {
		t.Fatalf("TryLock with the replica up: %v", err)
	}
	if v, err := replica.Do("GET", suitePrefix+"{acked}"); err != nil || v == nil {
		t.Errorf("replica holds %v, %v under the acknowledged key; want the token", v, err)
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Errorf("Extend with the replica up: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}

	two := newManager(2)
	defer two.Close()
	if _, err := two.TryLock(ctx, "two"); !errors.Is(err, dlm.ErrReplicaAck) || !errors.Is(err, dlm.ErrUnavailable) {
		t.Errorf("TryLock asking for 2 acks of 1 replica = %v; want ErrReplicaAck, unavailable", err)
	}
	// The failed attempt's release follows TryLock's return.
	for deadline := time.Now().Add(max(10*time.Second, 4*timeout)); ; time.Sleep(5 * time.Millisecond) {
		v, err := master.Do("GET", suitePrefix+"{two}")
		if err == nil && v == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("master holds %v, %v under the unacknowledged key; want it released", v, err)
			break
		}
	}

	rl, err := m.TryRLock(ctx, "shared")
	if err != nil {
		t.Fatalf("TryRLock with the replica up: %v", err)
	}
	defer rl.Unlock(ctx)
	sem, err := m.Semaphore("pool", 2)
	if err != nil {
		t.Fatal(err)
	}
	permit, err := sem.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("Semaphore.TryAcquire with the replica up: %v", err)
	}
	defer permit.Unlock(ctx)
	if _, err := two.TryRLock(ctx, "two-shared"); !errors.Is(err, dlm.ErrReplicaAck) {
		t.Errorf("TryRLock asking for 2 acks of 1 replica = %v; want ErrReplicaAck", err)
	}
	twoSem, err := two.Semaphore("two-pool", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := twoSem.TryAcquire(ctx); !errors.Is(err, dlm.ErrReplicaAck) {
		t.Errorf("Semaphore.TryAcquire asking for 2 acks of 1 replica = %v; want ErrReplicaAck", err)
	}

	replica.Pause()
	_, err = m.TryLock(ctx, "paused")
	_, rerr := m.TryRLock(ctx, "paused-shared")
	rext := rl.Extend(ctx, 5*time.Second)
	pext := permit.Extend(ctx, 5*time.Second)
	replica.Resume()
	if !errors.Is(err, dlm.ErrReplicaAck) {
		t.Errorf("TryLock with the replica paused = %v; want ErrReplicaAck", err)
	}
	if !errors.Is(rerr, dlm.ErrReplicaAck) {
		t.Errorf("TryRLock with the replica paused = %v; want ErrReplicaAck", rerr)
	}
	if !errors.Is(rext, dlm.ErrReplicaAck) {
		t.Errorf("read lock's Extend with the replica paused = %v; want ErrReplicaAck", rext)
	}
	if !errors.Is(pext, dlm.ErrReplicaAck) {
		t.Errorf("permit's Extend with the replica paused = %v; want ErrReplicaAck", pext)
	}
	testAutoExtendAcked(t, n, replica, pace)
}

// testAutoExtendAcked checks that the batched auto-extension of a lock, a
// read lock and a permit on n waits for the replica: extended while it is
// up, failed with ErrReplicaAck while it is paused. Its node timeout is
// 500 ms stretched to pace, the acknowledgement's timeout half of it, and
// the TTL four node timeouts, at least 2 s.
func testAutoExtendAcked(t *testing.T, n driver.Node, replica *redistest.Server, pace redistest.Pace) {
	ctx := context.Background()
	events := make(chan *dlm.Event, 256)
	hook := hookFunc(func(_ context.Context, e *dlm.Event) {
		if e.Kind == dlm.EventExtended || e.Kind == dlm.EventExtendFailed {
			c := *e
			select {
			case events <- &c:
			default:
			}
		}
	})
	timeout := pace.Stretch(500 * time.Millisecond)
	wait := max(10*time.Second, 20*timeout) // a broken build's bound
	m, err := dlm.New([]driver.Node{n}, dlm.WithKeyPrefix(suitePrefix), dlm.WithTTL(max(2*time.Second, 4*timeout)),
		dlm.WithNodeTimeout(timeout), dlm.WithReplicaAck(1, timeout/2), dlm.WithHook(hook), dlm.WithRetry(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	auto := dlm.WithAutoExtend(dlm.AutoExtend{})
	l, err := m.TryLock(ctx, "auto-acked", auto)
	if err != nil {
		t.Fatalf("TryLock with auto-extension: %v", err)
	}
	defer l.Unlock(ctx)
	rl, err := m.TryRLock(ctx, "auto-acked-shared", auto)
	if err != nil {
		t.Fatalf("TryRLock with auto-extension: %v", err)
	}
	defer rl.Unlock(ctx)
	sem, err := m.Semaphore("auto-acked-pool", 2)
	if err != nil {
		t.Fatal(err)
	}
	permit, err := sem.TryAcquire(ctx, auto)
	if err != nil {
		t.Fatalf("Semaphore.TryAcquire with auto-extension: %v", err)
	}
	defer permit.Unlock(ctx)
	// Each extended, acknowledged; a failure of a busy machine is tried
	// again.
	want := map[string]bool{"auto-acked": true, "auto-acked-shared": true, "auto-acked-pool": true}
	for deadline := time.After(wait); len(want) > 0; {
		select {
		case e := <-events:
			if e.Kind == dlm.EventExtended {
				delete(want, e.Key)
			}
		case <-deadline:
			t.Fatalf("no acknowledged auto-extension within %v of %v", wait, want)
		}
	}
	replica.Pause()
	defer replica.Resume()
	for deadline := time.After(wait); ; {
		select {
		case e := <-events:
			if e.Kind == dlm.EventExtendFailed && errors.Is(e.Err, dlm.ErrReplicaAck) {
				return
			}
		case <-deadline:
			t.Fatalf("no auto-extension failed with ErrReplicaAck within %v of the replica's pause", wait)
		}
	}
}
