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

// TestFairOrphanMember puts in a fair lock's line, on every node, a waiter
// that has no end of its place (`:waiters:end`): one ZADD by a client that
// may write under the prefix, or the eviction of the ends alone. Such a
// member never ends, and used to head the line for as long as anyone waited
// in it, so that a fair TryLock or Lock of the free key was refused on
// every attempt. The scripts now drop a member without an end when they
// find it at the head: on 1 and on 3 nodes, TryLock obtains the free key,
// Lock obtains it at its first attempt, and the member is gone from every
// node. The context only keeps a Lock that never obtains the lock from
// hanging the test.
func TestFairOrphanMember(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d nodes", size), func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, size)
			hang := redistest.MeasurePace(t, srvs[0]).Stretch(5 * time.Second)
			m := redisManager(t, srvs, dlm.WithFairness(dlm.Fairness{}), holdEverywhere(t, srvs[0]))
			for f, form := range []struct {
				name string
				cmds func(ws, ends string) [][]string
			}{
				{"a member without an end", func(ws, _ string) [][]string {
					return [][]string{{"ZADD", ws, "1", "ghost"}}
				}},
				{"members whose ends were evicted", func(ws, ends string) [][]string {
					return [][]string{
						{"ZADD", ws, "1", "ghost", "2", "ghost2"},
						{"ZADD", ends, "99999999999999", "ghost", "99999999999999", "ghost2"},
						{"PEXPIRE", ws, "60000"}, {"PEXPIRE", ends, "60000"},
						{"DEL", ends},
					}
				}},
			} {
				for _, call := range []string{"TryLock", "Lock"} {
					t.Run(form.name+"/"+call, func(t *testing.T) {
						key := fmt.Sprintf("orphan-%d-%d-%s", size, f, call)
						line := script.LineKeys("redlock:{" + key + "}")
						for _, s := range srvs {
							for _, cmd := range form.cmds(line[0], line[1]) {
								if _, err := s.Do(cmd...); err != nil {
									t.Fatal(err)
								}
							}
						}
						ctx, cancel := context.WithTimeout(context.Background(), hang)
						defer cancel()
						attempts := 0
						hook := dlm.WithHook(hookFunc(func(e *dlm.Event) {
							if e.Kind == dlm.EventObtained {
								attempts = e.Attempts
							}
						}))
						var l *dlm.Lock
						var err error
						if call == "TryLock" {
							l, err = m.TryLock(ctx, key, hook)
						} else {
							l, err = m.Lock(ctx, key, hook)
						}
						if err != nil {
							t.Fatalf("fair %s of a free key whose line holds %s = %v; want the lock", call, form.name, err)
						}
						defer l.Unlock(context.Background())
						awaitHeld(t, srvs, key) // every node ran its request
						if attempts != 1 {
							t.Errorf("fair %s of a free key whose line holds %s obtained it after %d attempts; want 1", call, form.name, attempts)
						}
						for i, s := range srvs {
							if v, err := s.Do("ZRANGE", line[0], "0", "-1"); err != nil || len(v.([]any)) != 0 {
								t.Errorf("node %d: ZRANGE %s = %v, %v; want an empty line", i, line[0], v, err)
							}
						}
					})
				}
			}
		})
	}
}
