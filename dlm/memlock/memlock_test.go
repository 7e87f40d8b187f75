package memlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/memlock"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// TestLocker runs dlmtest's Locker suite, which a manager on real Redis
// passes too, on the in-memory manager.
func TestLocker(t *testing.T) {
	t.Parallel()
	snap := leakcheck.Scoped()
	t.Cleanup(func() { snap.Check(t, 5*time.Second) }) // after the parallel subtests
	dlmtest.TestLocker(t, func(t *testing.T) dlm.Locker {
		m, err := memlock.New()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	})
}

// TestShared runs dlmtest's suite of the read-write lock and the semaphore,
// which a manager on real Redis passes too, on the in-memory manager.
func TestShared(t *testing.T) {
	t.Parallel()
	snap := leakcheck.Scoped()
	t.Cleanup(func() { snap.Check(t, 5*time.Second) }) // after the parallel subtests
	dlmtest.TestShared(t, func(t *testing.T) *dlm.Manager {
		m, err := memlock.New()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	})
}

// TestSharedFiveNodes runs the suite over five in-memory nodes, one of them
// down: readers and writers need a majority, and a permit of the suite's
// limit of 2 four of the five (dlm.SemaphoreQuorum), which the nodes up
// still give.
func TestSharedFiveNodes(t *testing.T) {
	t.Parallel()
	dlmtest.TestShared(t, func(t *testing.T) *dlm.Manager {
		var nodes []driver.Node
		for i := range 5 {
			n := memlock.NewNode(fmt.Sprintf("n%d:1", i))
			n.SetDown(i == 4)
			nodes = append(nodes, n)
		}
		m, err := dlm.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	})
}

// TestLockerThreeNodes runs the suite over three in-memory nodes, one of
// them down: a minority of failed nodes changes nothing.
func TestLockerThreeNodes(t *testing.T) {
	t.Parallel()
	dlmtest.TestLocker(t, func(t *testing.T) dlm.Locker {
		nodes := []*memlock.Node{memlock.NewNode("a:1"), memlock.NewNode("b:1"), memlock.NewNode("c:1")}
		nodes[2].SetDown(true)
		m, err := dlm.New([]driver.Node{nodes[0], nodes[1], nodes[2]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	})
}

// TestUnavailable checks that a majority of nodes down gives
// ErrUnavailable, as on Redis, and that the nodes serve again once up.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	nodes := []*memlock.Node{memlock.NewNode("a:1"), memlock.NewNode("b:1"), memlock.NewNode("c:1")}
	m, err := dlm.New([]driver.Node{nodes[0], nodes[1], nodes[2]})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	nodes[0].SetDown(true)
	nodes[1].SetDown(true)
	_, err = m.TryLock(context.Background(), "k")
	var nerr *dlm.NodeError
	if !errors.Is(err, dlm.ErrUnavailable) || !errors.As(err, &nerr) || nerr.Node != "a:1" {
		t.Fatalf("TryLock with two of three nodes down = %v; want ErrUnavailable naming node a:1", err)
	}
	nodes[0].SetDown(false)
	// The failed attempt is released in the background on the node that
	// granted it: Lock retries until it is.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := m.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock with one of three nodes down = %v", err)
	}
	l.Unlock(context.Background())
}

// TestFlushAllDoubleGrant shows why Redlock needs delayed restarts, on the
// in-memory node as on Redis: a node that loses its keys lets a second
// client take a lock still held.
func TestFlushAllDoubleGrant(t *testing.T) {
	t.Parallel()
	n := memlock.NewNode("a:1")
	m, err := dlm.New([]driver.Node{n})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	n.FlushAll()
	l2, err := m.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatalf("TryLock after FlushAll = %v; want the lock (the node forgot it)", err)
	}
	l2.Unlock(context.Background())
	if err := l.Extend(context.Background(), time.Second); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Extend after FlushAll = %v; want ErrLockLost", err)
	}
}

// TestElection runs an election in memory: Observe sees the leader's
// value, and its end.
func TestElection(t *testing.T) {
	t.Parallel()
	m, err := memlock.New(dlm.WithTTL(300 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := m.Election("e")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-obs; got.Leader {
		t.Fatalf("observed %+v before any campaign; want no leader", got)
	}
	ld, err := e.Campaign(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	if got := <-obs; got != (dlm.Observation{Leader: true, Value: "me"}) {
		t.Fatalf("observed %+v; want leader me", got)
	}
	if err := ld.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-obs; got.Leader {
		t.Fatalf("observed %+v after Resign; want no leader", got)
	}
}

// TestWakeAfterNodeDown takes the only node down and up again while a
// caller waits: the subscription, ended with the node, is opened again, and
// the release wakes the waiter long before its backoff would.
func TestWakeAfterNodeDown(t *testing.T) {
	t.Parallel()
	n := memlock.NewNode("a:1")
	m, err := dlm.New([]driver.Node{n}, dlm.WithRetry(0, dlm.ExponentialBackoff(time.Minute, time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	holder, err := dlm.New([]driver.Node{n}) // another process
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		l2, err := holder.Lock(wctx, "k", dlm.WithRetry(0, dlm.ExponentialBackoff(time.Minute, time.Minute)))
		if err == nil {
			l2.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	n.SetDown(true)
	n.SetDown(false)
	time.Sleep(500 * time.Millisecond) // the subscription is opened again (after 100ms)
	start := time.Now()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiting Lock = %v", err)
		}
		t.Logf("woken %v after the release", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the release within 10s (its backoff is a minute)")
	}
}

// TestObserveHearsWaitingGrant checks that the grant of a campaign, whose
// attempts are those of a waiting Lock (announce flag "1w"), is announced
// as on Redis: Observe reports the new leader at once, long before its
// next poll.
func TestObserveHearsWaitingGrant(t *testing.T) {
	t.Parallel()
	m, err := memlock.New()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := m.Election("e")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-obs; got.Leader {
		t.Fatalf("observed %+v before any campaign; want no leader", got)
	}
	// The first read is done: without an announcement the next is due
	// dlm.ObservePoll after it.
	start := time.Now()
	ld, err := e.Campaign(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Resign(context.Background())
	bound := dlm.ObservePoll / 2
	select {
	case got := <-obs:
		if got != (dlm.Observation{Leader: true, Value: "me"}) {
			t.Fatalf("observed %+v; want leader me", got)
		}
		if took := time.Since(start); took > bound {
			t.Errorf("Observe reported the leader %v after the campaign began; want within %v (the poll is %v): the grant was not announced", took, bound, dlm.ObservePoll)
		}
	case <-time.After(5 * dlm.ObservePoll):
		t.Fatalf("Observe did not report the leader within %v", 5*dlm.ObservePoll)
	}
}
