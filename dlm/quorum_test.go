package dlm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// deadlineNode is a fakeNode behind a client that, like a socket deadline,
// notices the end of a request's context only at its deadline, not a
// cancellation before it. It also records whether each request came under
// a context of driver.WithNodeDeadline.
type deadlineNode struct {
	*fakeNode
	plain chan struct{} // closed at the first request whose context was not one
}

func (n *deadlineNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if !driver.DeadlineOnly(ctx) {
		select {
		case <-n.plain:
		default:
			close(n.plain)
		}
	}
	inner := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		inner, cancel = context.WithDeadline(inner, dl)
		defer cancel()
	}
	return n.fakeNode.Eval(inner, s, keys, args)
}

func deadlineNodes(fs []*fakeNode) []driver.Node {
	ns := make([]driver.Node, len(fs))
	for i, f := range fs {
		ns[i] = &deadlineNode{fakeNode: f, plain: make(chan struct{})}
	}
	return ns
}

func newDeadlineManager(t *testing.T, fs []*fakeNode, opts ...ManagerOption) (*Manager, []driver.Node) {
	t.Helper()
	ns := deadlineNodes(fs)
	m, err := New(ns, opts...)
	if err != nil {
		t.Fatalf("New(%d deadline nodes) = %v", len(fs), err)
	}
	t.Cleanup(func() { m.Close() })
	return m, ns
}

// TestLockReturnsOnCancelBeforeNodeDeadline checks that Lock returns when
// its context is cancelled although the nodes' requests run on until their
// deadline, the node timeout: the manager stops waiting by itself.
func TestLockReturnsOnCancelBeforeNodeDeadline(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	const nodeTimeout = 2 * time.Second
	fs := newFakes(5)
	for _, f := range fs {
		f.inject(hang, 0)
	}
	m, ns := newDeadlineManager(t, fs, WithNodeTimeout(nodeTimeout))
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(50*time.Millisecond, cancel)
	defer timer.Stop()
	start := time.Now()
	_, err := m.Lock(ctx, "k")
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Lock with every node hanging, cancelled after 50ms = %v; want an error wrapping %v", err, context.Canceled)
	}
	if took > nodeTimeout/2 {
		t.Errorf("Lock returned %v after it began, its context cancelled after 50ms; want well before the node timeout %v", took, nodeTimeout)
	}
	for i, n := range ns {
		select {
		case <-n.(*deadlineNode).plain:
			t.Errorf("node %d got a request whose context was not of driver.WithNodeDeadline", i)
		default:
		}
	}
}

// TestLateGrantAfterCancelReleased checks that nodes that grant a Lock
// after its caller gave up are released, not left holding the key for its
// TTL.
func TestLateGrantAfterCancelReleased(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	for _, f := range fs {
		f.inject(healthy, 300*time.Millisecond)
	}
	m, _ := newDeadlineManager(t, fs, WithNodeTimeout(2*time.Second), WithTTL(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if l, err := m.Lock(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		if l != nil {
			l.Unlock(context.Background())
		}
		t.Fatalf("Lock with every node answering after 300ms, context ending after 50ms = %v; want an error wrapping %v", err, context.DeadlineExceeded)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		held := 0
		for _, f := range fs {
			if _, _, ok := f.get(rkey("k")); ok {
				held++
			}
		}
		released := countAll(fs, "release")
		if held == 0 && released >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5s after a Lock given up on, %d of 5 nodes hold its key and %d releases were sent; want every node's late grant released", held, released)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWorkersEndWhenIdle checks that the goroutines that ran node requests
// end by themselves once idle for workerIdle, the manager still open.
func TestWorkersEndWhenIdle(t *testing.T) {
	fs := newFakes(5)
	m := newManager(t, fs)
	snap := leakcheck.Take()
	for range 3 {
		l, err := m.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock = %v", err)
		}
	}
	snap.Check(t, workerIdle+2*time.Second)
}

// TestCloseEndsIdleWorkers checks that Close ends the idle workers at once
// rather than after workerIdle.
func TestCloseEndsIdleWorkers(t *testing.T) {
	fs := newFakes(5)
	snap := leakcheck.Take()
	m, err := New(asNodes(fs))
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatalf("TryLock = %v", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	start := time.Now()
	m.Close()
	if leaked := snap.Wait(workerIdle / 2); len(leaked) > 0 {
		t.Errorf("%d goroutine(s) running %v after Close, before the workers' idle time %v ended them:\n%s", len(leaked), time.Since(start), workerIdle, leaked[0])
	}
}
