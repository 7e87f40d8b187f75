package dlm_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// Item 7 of the security review: what one node answers, and how many
// entries a line or a lease set holds, must not break the scripts on the
// other nodes.

// hostileTicketNode is a node that answers every fair acquire with a
// refusal and the largest ticket an int64 holds, as a hostile node (or a
// tamperer on a plaintext link) may.
type hostileTicketNode struct {
	driver.Node
}

func (n *hostileTicketNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if script.ShapeOf(s).Ticketed {
		return []any{int64(0), int64(math.MaxInt64)}, nil
	}
	return n.Node.Eval(ctx, s, keys, args)
}

// TestFairTicketFromHostileNode has one node of three answer fair acquires
// with a ticket of 2^63-1 while fair waiters queue behind a holder. A
// waiter used to carry the largest ticket a node gave it to every node,
// and the honest nodes stored it in their counter of tickets, which INCR
// then refused for every new waiter. A ticket now is the waiter's own, the
// same on every node, and a reply's ticket that no script writes (2^53 or
// more) is that node's failure: the honest nodes' lines hold each waiter
// under its own ticket, in the order they asked, and the lock goes to both
// waiters once its holder releases it.
func TestFairTicketFromHostileNode(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	nodes := []driver.Node{&hostileTicketNode{respNode(t, srvs[0].Addr(), "")}, respNode(t, srvs[1].Addr(), ""), respNode(t, srvs[2].Addr(), "")}
	fair := dlm.WithFairness(dlm.Fairness{})
	m, err := dlm.New(nodes, fair, dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)), dlm.WithRetry(0, dlm.FixedBackoff(20*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	holder, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock on a free key with 2 honest nodes of 3 = %v; want the lock", err)
	}
	// lockAfter locks "k" in the background and unlocks it.
	lockAfter := func() <-chan error {
		got := make(chan error, 1)
		go func() {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			l, err := m.Lock(lctx, "k")
			if err == nil {
				err = l.Unlock(ctx)
			}
			got <- err
		}()
		return got
	}
	// The first waiter makes several attempts, each passing on the largest
	// ticket it holds.
	first := lockAfter()
	line := script.LineKeys("redlock:{k}")
	waitForPlaces(t, srvs[1:], line[0], 1)
	time.Sleep(200 * time.Millisecond)
	for _, s := range srvs[1:] {
		v, err := s.Do("ZRANGE", line[0], "0", "-1", "WITHSCORES")
		if err != nil {
			t.Fatal(err)
		}
		pair, _ := v.([]any)
		var score int64
		if len(pair) == 2 {
			score, _ = strconv.ParseInt(pair[1].(string), 10, 64)
		}
		if len(pair) != 2 || score <= 0 || score >= script.FenceLimit {
			t.Errorf("node %s: ZRANGE %s = %q; want the waiter under its own ticket, below 2^53", s.Addr(), line[0], pair)
		}
	}
	// A new waiter still takes a place on the honest nodes, and both obtain
	// the lock once the holder releases it.
	second := lockAfter()
	waitForPlaces(t, srvs[1:], line[0], 2)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("holder's Unlock = %v", err)
	}
	for i, got := range []<-chan error{first, second} {
		if err := <-got; err != nil {
			t.Errorf("fair waiter %d's Lock after the hostile ticket = %v; want the lock", i, err)
		}
	}
}

// waitForPlaces waits until each server's line holds at least n waiters,
// for a bound stretched to the pace measured on the run (see poll).
func waitForPlaces(t *testing.T, srvs []*redistest.Server, line string, n int64) {
	t.Helper()
	poll(t, srvs[0], fmt.Sprintf("%d waiters in %s on every node", n, line), func() bool {
		for _, s := range srvs {
			if v, err := s.Do("ZCARD", line); err != nil || v.(int64) < n {
				return false
			}
		}
		return true
	})
}

// TestManyEndedEntries fills a fair lock's line and a read lock's set of
// readers with 10,000 entries whose places and leases ended, as a fleet of
// waiters or readers that crashed at once leaves them (a line may be given
// room for that many). The scripts drop ended entries first: Lua's unpack
// of that many members fails ("too many results to unpack"), which would
// fail every attempt until the set expired. The lock and the read lock are
// obtained, and the ended entries are gone.
func TestManyEndedEntries(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 1)
	s := srvs[0]
	const ended = 10000
	fill := func(t *testing.T, key string, also string) {
		t.Helper()
		args := []string{"ZADD", key}
		for i := range ended {
			args = append(args, "1", "member"+strconv.Itoa(i))
		}
		if _, err := s.Do(args...); err != nil {
			t.Fatal(err)
		}
		if also != "" {
			args[1] = also
			if _, err := s.Do(args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The attempts of a lock whose scripts fail are retried: the
	// deadline ends them.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		set  string // the set whose entries ended: places, or readers
		line string // the fair line, filled with the same members
		take func(m *dlm.Manager) (*dlm.Lock, error)
	}{
		{"fair lock", script.LineKeys("redlock:{f}")[1], script.LineKeys("redlock:{f}")[0], func(m *dlm.Manager) (*dlm.Lock, error) {
			return m.TryLock(ctx, "f", dlm.WithFairness(dlm.Fairness{MaxWaiters: 2 * ended}))
		}},
		{"read lock", "redlock:{r}" + script.ReadersSuffix, "", func(m *dlm.Manager) (*dlm.Lock, error) {
			return m.RLock(ctx, "r")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fill(t, tc.set, tc.line)
			m := redisManager(t, srvs)
			l, err := tc.take(m)
			if err != nil {
				t.Fatalf("%s over %d ended entries = %v; want it obtained", tc.name, ended, err)
			}
			if v, err := s.Do("ZCOUNT", tc.set, "-inf", "1"); err != nil || v != int64(0) {
				t.Errorf("ZCOUNT %s of the ended entries = %v, %v; want 0", tc.set, v, err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("Unlock = %v", err)
			}
		})
	}
}
