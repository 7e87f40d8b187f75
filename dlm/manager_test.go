package dlm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

func TestQuorum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, want int }{
		{1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {6, 4}, {7, 4},
	} {
		if got := quorum(tc.n); got != tc.want {
			t.Errorf("quorum(%d) = %d; want %d", tc.n, got, tc.want)
		}
	}
}

// TestNewRejects checks that New refuses node lists that would break the
// quorum arithmetic, with ErrInvalid.
func TestNewRejects(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	dup := newFakeNode(1) // a second node named fake-1
	for _, tc := range []struct {
		name  string
		nodes []driver.Node
		want  string
	}{
		{"nil list", nil, "no nodes"},
		{"empty list", []driver.Node{}, "no nodes"},
		{"nil node", []driver.Node{fs[0], nil, fs[2]}, "node 1 is nil"},
		{"duplicate address", []driver.Node{fs[0], fs[1], dup}, "fake-1"},
		{"same node twice", []driver.Node{fs[0], fs[0]}, "fake-0"},
	} {
		m, err := New(tc.nodes)
		if m != nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s) = %v, %v; want nil, ErrInvalid mentioning %q", tc.name, m, err, tc.want)
		}
	}
	if got := countAll(append(fs, dup), ""); got != 0 {
		t.Errorf("New made %d script calls; want 0", got)
	}
}

// TestNewWarnsOnEvenNodes checks the warning about an even number of nodes.
func TestNewWarnsOnEvenNodes(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 6; n++ {
		logger, buf := newLogger()
		m, err := New(asNodes(newFakes(n)), WithLogger(logger))
		if err != nil {
			t.Fatalf("New(%d nodes) = %v", n, err)
		}
		m.Close()
		warned := strings.Contains(buf.String(), "level=WARN") && strings.Contains(buf.String(), "even number of nodes")
		if want := n%2 == 0; warned != want {
			t.Errorf("New(%d nodes) warned = %v; want %v (log: %q)", n, warned, want, buf.String())
		}
	}
}

// TestNewCopiesNodes checks that the Manager does not share the caller's
// slice: changing it after New changes nothing.
func TestNewCopiesNodes(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	nodes := asNodes(fs)
	m2, err := New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	other := newFakes(3)
	copy(nodes, asNodes(other))
	l, err := m2.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatalf("TryLock = %v", err)
	}
	defer l.Unlock(context.Background())
	if got := countAll(other, ""); got != 0 {
		t.Errorf("Manager used %d times the nodes put into the caller's slice after New; want 0", got)
	}
	if got := fmt.Sprint(m2.Nodes()); got != "[fake-0 fake-1 fake-2]" {
		t.Errorf("Nodes() = %s; want [fake-0 fake-1 fake-2]", got)
	}
}

// TestClosed checks that every operation after Close returns ErrClosed
// without a round trip, and that Close leaves nodes given to New open.
func TestClosed(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	m, err := New(asNodes(fs))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := m.TryLock(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the acquire on every node", func() bool {
		return strings.Count(strings.Join(holders(fs, rkey("held")), ","), l.secret) == 3
	})
	if err := m.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close() = %v; want nil", err)
	}
	before := countAll(fs, "")
	if _, err := m.TryLock(ctx, "k"); !errors.Is(err, ErrClosed) {
		t.Errorf("TryLock after Close = %v; want ErrClosed", err)
	}
	if _, err := m.Lock(ctx, "k"); !errors.Is(err, ErrClosed) {
		t.Errorf("Lock after Close = %v; want ErrClosed", err)
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Extend after Close = %v; want ErrClosed", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Unlock after Close = %v; want ErrClosed", err)
	}
	if got := countAll(fs, "") - before; got != 0 {
		t.Errorf("%d script calls after Close; want 0", got)
	}
	if got := countAll(fs, "close"); got != 0 {
		t.Errorf("Close of a Manager from New closed %d nodes; want 0", got)
	}
}

// TestLockStopsWhenClosed checks that a Lock waiting between attempts
// returns ErrClosed once the Manager is closed.
func TestLockStopsWhenClosed(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(1)
	fs[0].set(rkey("k"), "other", time.Minute)
	m, err := New(asNodes(fs), WithRetry(0, FixedBackoff(time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.Lock(context.Background(), "k")
		done <- err
	}()
	for fs[0].count("acquire") == 0 { // the Lock is under way
		time.Sleep(time.Millisecond)
	}
	m.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Lock when the Manager closes = %v; want ErrClosed", err)
	}
}

func TestCloseWaitsForRequests(t *testing.T) {
	checkLeaks(t)
	fs := newFakes(5)
	fs[3].inject(hang, 0)
	fs[4].inject(hang, 0)
	m := newManager(t, fs, WithNodeTimeout(time.Second))
	snap := leakcheck.Take()
	if _, err := m.TryLock(context.Background(), "k"); err != nil {
		t.Fatalf("TryLock with 2 of 5 nodes hanging: %v", err)
	}
	// TryLock returned on the quorum; the requests to the hanging nodes
	// are still under way until their node timeout.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A goroutine Close waited for may still be on its way out; one Close
	// did not wait for would run until its node timeout, a second.
	if leaked := snap.Wait(200 * time.Millisecond); len(leaked) > 0 {
		t.Errorf("Close returned with %d node request(s) still running:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}
