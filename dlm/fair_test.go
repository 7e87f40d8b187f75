package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// fairOpts is the fair mode with places that live long enough that the
// waiters' retries (at most a third of it) are far slower than a wake-up.
var fairOpts = []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{Expiry: 30 * time.Second})}

// lineLen returns how many waiters s keeps in key's line whose places have
// not ended (a place that ended is dropped when the line is next read for
// its head).
func lineLen(t *testing.T, s *redistest.Server, key string) int64 {
	t.Helper()
	now, err := s.Do("TIME")
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := strconv.ParseInt(now.([]any)[0].(string), 10, 64)
	usec, _ := strconv.ParseInt(now.([]any)[1].(string), 10, 64)
	v, err := s.Do("ZCOUNT", "redlock:{"+key+"}:waiters:end", "("+strconv.FormatInt(sec*1000+usec/1000, 10), "+inf")
	if err != nil {
		t.Fatal(err)
	}
	return v.(int64)
}

// awaitLine waits until every server keeps n waiters in key's line, for a
// bound stretched to the pace measured on the run (see poll); when they do
// not, it logs the lines before it fails t.
func awaitLine(t *testing.T, srvs []*redistest.Server, key string, n int64) {
	t.Helper()
	done := false
	defer func() {
		if done {
			return
		}
		for i, s := range srvs {
			v, _ := s.Do("ZRANGE", "redlock:{"+key+"}:waiters", "0", "-1", "WITHSCORES")
			w, _ := s.Do("ZRANGE", "redlock:{"+key+"}:waiters:end", "0", "-1", "WITHSCORES")
			k, _ := s.Do("GET", "redlock:{"+key+"}")
			t.Logf("node %d: line %v places %v key %v", i, v, w, k)
		}
	}()
	poll(t, srvs[0], fmt.Sprintf("%d waiters in %q's line on every node", n, key), func() bool {
		for _, s := range srvs {
			if lineLen(t, s, key) != n {
				return false
			}
		}
		return true
	})
	done = true
}

// awaitHeld waits until every server holds key's lock: the requests of the
// grant have all been served, and none can land after the next client's.
func awaitHeld(t *testing.T, srvs []*redistest.Server, key string) {
	t.Helper()
	poll(t, srvs[0], fmt.Sprintf("lock %q held by every node", key), func() bool {
		for _, s := range srvs {
			v, err := s.Do("EXISTS", "redlock:{"+key+"}")
			if err != nil {
				t.Fatal(err)
			}
			if v != int64(1) {
				return false
			}
		}
		return true
	})
}

// TestFairOrder checks that in fair mode waiters from different processes
// obtain a lock in the order they asked for it, each woken by the release
// before it, and that the lines are empty afterwards.
func TestFairOrder(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	ctx := context.Background()
	holder := newWakeManager(t, srvs, append(fairOpts, holdEverywhere(t, srvs[0]))...)
	held, err := holder.Lock(ctx, "fifo")
	if err != nil {
		t.Fatal(err)
	}
	awaitHeld(t, srvs, "fifo")
	const waiters = 4
	granted := make(chan int, waiters)
	for i := range waiters {
		m := newWakeManager(t, srvs, fairOpts...)
		go func() {
			l, err := m.Lock(ctx, "fifo")
			if err != nil {
				t.Errorf("waiter %d: Lock = %v", i, err)
				granted <- -1
				return
			}
			granted <- i
			l.Unlock(ctx)
		}()
		awaitLine(t, srvs, "fifo", int64(i+1)) // in line before the next one asks
	}
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for want := range waiters {
		if got := <-granted; got != want {
			t.Fatalf("grant %d went to waiter %d; want waiter %d, in the order they asked", want, got, want)
		}
	}
	if d := time.Since(released); d > 5*time.Second {
		t.Errorf("%d waiters took %v to pass the lock along; want each woken by the release before it", waiters, d)
	}
	awaitLine(t, srvs, "fifo", 0)
}

// TestFairReleaserWaitsItsTurn checks that a client that releases a lock and
// asks for it again at once queues behind the waiter already in line.
func TestFairReleaserWaitsItsTurn(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	ctx := context.Background()
	a, b := newWakeManager(t, srvs, append(fairOpts, holdEverywhere(t, srvs[0]))...), newWakeManager(t, srvs, fairOpts...)
	held, err := a.Lock(ctx, "turns")
	if err != nil {
		t.Fatal(err)
	}
	awaitHeld(t, srvs, "turns")
	res := lockAsync(b, "turns")
	awaitLine(t, srvs, "turns", 1)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	again := lockAsync(a, "turns") // at once
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	awaitLine(t, srvs, "turns", 1) // the releaser, refused, in line
	select {
	case ra := <-again:
		t.Fatalf("the releaser asking again obtained the lock (%v) while the waiter in line held it", ra.err)
	default:
	}
	r.l.Unlock(ctx)
	ra := <-again
	if ra.err != nil {
		t.Fatalf("the releaser's second Lock = %v; want the lock after the waiter's turn", ra.err)
	}
	ra.l.Unlock(ctx)
}

// TestFairDeadWaiter checks that a waiter that died holds the line up only
// until its place expires, and that TryLock does not jump the line. The
// place lasts 600 ms, stretched to the pace of the run: a TryLock that comes
// after the place ended, or a Lock that obtained the lock more than a few
// seconds (also stretched) after it, says nothing either way on a busy
// machine and runs again with both doubled; a Lock that obtains the lock
// before the place ended fails at once.
func TestFairDeadWaiter(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	p := redistest.MeasurePace(t, srvs[0])
	ctx := context.Background()
	m := newWakeManager(t, srvs, dlm.WithFairness(dlm.Fairness{Expiry: time.Second}))
	redistest.Widen(t, 3, func(scale time.Duration) string {
		key := fmt.Sprintf("dead-%d", scale)
		place, after := scale*p.Stretch(600*time.Millisecond), scale*p.Stretch(4*time.Second)
		// A waiter that died: first in line, its place ending in place.
		set := time.Now()
		for _, s := range srvs {
			now, err := s.Do("TIME")
			if err != nil {
				t.Fatal(err)
			}
			sec, _ := strconv.ParseInt(now.([]any)[0].(string), 10, 64)
			usec, _ := strconv.ParseInt(now.([]any)[1].(string), 10, 64)
			end := sec*1000 + usec/1000 + place.Milliseconds()
			for _, cmd := range [][]string{
				{"ZADD", "redlock:{" + key + "}:waiters", "1", "ghost"},
				{"ZADD", "redlock:{" + key + "}:waiters:end", fmt.Sprint(end), "ghost"},
			} {
				if _, err := s.Do(cmd...); err != nil {
					t.Fatal(err)
				}
			}
		}
		l, err := m.TryLock(ctx, key)
		if err == nil {
			l.Unlock(ctx)
			if since := time.Since(set); since >= place {
				return fmt.Sprintf("TryLock came %v after the place was set, when it had ended", since)
			}
			t.Errorf("TryLock of a free lock with a waiter in line = <nil> %v after its place was set; want ErrNotObtained", time.Since(set))
			return ""
		}
		if !errors.Is(err, dlm.ErrNotObtained) {
			t.Errorf("TryLock of a free lock with a waiter in line = %v; want ErrNotObtained", err)
			return ""
		}
		if l, err = m.Lock(ctx, key); err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
		// The place ends no sooner than place after set (the servers' clock
		// is this machine's); a few milliseconds allow for rounding.
		switch waited := time.Since(set); {
		case waited < place-10*time.Millisecond:
			t.Errorf("Lock behind a dead waiter whose place ends %v after it was set obtained the lock after %v; want not before the place expired", place, waited)
		case waited > place+after:
			return fmt.Sprintf("Lock behind a dead waiter whose place ended after %v obtained the lock after %v, more than %v later", place, waited, after)
		}
		return ""
	})
}

// TestFairLineBound checks that a full line takes no more waiters, and that
// a waiter without a place still obtains the lock once there is room.
func TestFairLineBound(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	ctx := context.Background()
	opts := []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{MaxWaiters: 2, Expiry: 30 * time.Second}), dlm.WithRetry(0, dlm.FixedBackoff(20*time.Millisecond))}
	holder := newWakeManager(t, srvs, append(opts, holdEverywhere(t, srvs[0]))...)
	held, err := holder.Lock(ctx, "bounded")
	if err != nil {
		t.Fatal(err)
	}
	awaitHeld(t, srvs, "bounded")
	var results []<-chan lockResult
	for i := range 3 {
		results = append(results, lockAsync(newWakeManager(t, srvs, opts...), "bounded"))
		if i < 2 {
			awaitLine(t, srvs, "bounded", int64(i+1))
		}
	}
	time.Sleep(200 * time.Millisecond) // the third retries about ten times
	for i, s := range srvs {
		if n := lineLen(t, s, "bounded"); n != 2 {
			t.Errorf("node %d keeps %d places in a line bounded to 2 waiters", i, n)
		}
	}
	held.Unlock(ctx)
	// The bound only keeps a lost turn from hanging the test.
	p := redistest.MeasurePace(t, srvs[0])
	bound := p.Stretch(10 * time.Second)
	for i, res := range results {
		select {
		case r := <-res:
			if r.err != nil {
				t.Errorf("waiter %d: Lock = %v", i, r.err)
				continue
			}
			r.l.Unlock(ctx)
		case <-time.After(bound):
			t.Fatalf("waiter %d did not obtain the lock within %v (pace %v)", i, bound, p)
		}
	}
}

func TestFairnessOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f  dlm.Fairness
		ok bool
	}{
		{dlm.Fairness{}, true},
		{dlm.Fairness{MaxWaiters: 1, Expiry: time.Second}, true},
		{dlm.Fairness{MaxWaiters: -1}, false},
		{dlm.Fairness{Expiry: -time.Second}, false},
		{dlm.Fairness{Expiry: 100 * time.Millisecond}, false}, // under two node timeouts of 250ms
	} {
		m, err := dlm.New(exampleNodes(1), dlm.WithNodeTimeout(250*time.Millisecond), dlm.WithFairness(tc.f))
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, dlm.ErrInvalid)) {
			t.Errorf("New with %+v = %v; want ok %v, or ErrInvalid", tc.f, err, tc.ok)
		}
		if m != nil {
			m.Close()
		}
	}
}

// lateReplies is a node whose replies come late while delay is set: the
// node runs each script at once, the client hears of it only later.
type lateReplies struct {
	driver.Node
	delay atomic.Int64 // nanoseconds
}

func (n *lateReplies) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	res, err := n.Node.Eval(ctx, s, keys, args)
	if d := time.Duration(n.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return res, err
}

// hookFunc turns a function into a dlm.Hook.
type hookFunc func(*dlm.Event)

func (f hookFunc) OnEvent(_ context.Context, e *dlm.Event) { f(e) }

// TestFairKeepsPlaceAfterFailedAttempt checks that a waiter whose attempt
// is granted by the nodes but fails all the same (here its replies come
// after its validity ended) keeps its place in line: the waiter who asked
// after it does not obtain the lock first. The first waiter is at the head
// of the line behind a holder, or asked for a free lock, with nobody in
// line, and the second asked while that attempt was under way.
func TestFairKeepsPlaceAfterFailedAttempt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		held bool // the lock is held when the first waiter asks
	}{{"head of the line", true}, {"first to ask", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srvs := redistest.StartServers(t, 3)
			ctx := context.Background()
			var held *dlm.Lock
			if tc.held {
				var err error
				if held, err = newWakeManager(t, srvs, append(fairOpts, holdEverywhere(t, srvs[0]))...).Lock(ctx, "kept"); err != nil {
					t.Fatal(err)
				}
				awaitHeld(t, srvs, "kept")
			}

			// The first waiter: a TTL of 2 s of which the drift allowance
			// leaves a validity of 1.1 s, node timeouts of 1.9 s, and replies
			// made 1.5 s late until one of its attempts was granted too
			// late.
			late := make([]*lateReplies, len(srvs))
			nodes := make([]driver.Node, len(srvs))
			for i, s := range srvs {
				late[i] = &lateReplies{Node: respNode(t, s.Addr(), "")}
				nodes[i] = late[i]
			}
			failed := make(chan struct{})
			var once sync.Once
			first, err := dlm.New(nodes, append(fairOpts, dlm.WithTTL(2*time.Second), dlm.WithDriftFactor(0.45), dlm.WithNodeTimeout(1900*time.Millisecond),
				dlm.WithRetry(0, dlm.FixedBackoff(50*time.Millisecond)),
				dlm.WithHook(hookFunc(func(e *dlm.Event) {
					var qerr *dlm.QuorumError
					if e.Kind == dlm.EventAttempt && errors.As(e.Err, &qerr) && qerr.Expired {
						for _, n := range late {
							n.delay.Store(0)
						}
						once.Do(func() { close(failed) })
					}
				})))...)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			order := make(chan string, 2)
			lockThenUnlock := func(m *dlm.Manager, name string) {
				l, err := m.Lock(ctx, "kept")
				if err != nil {
					t.Errorf("%s waiter: Lock = %v", name, err)
					order <- "error"
					return
				}
				order <- name
				l.Unlock(ctx)
			}
			if tc.held {
				go lockThenUnlock(first, "first")
				awaitLine(t, srvs, "kept", 1)
				go lockThenUnlock(newWakeManager(t, srvs, fairOpts...), "second")
				awaitLine(t, srvs, "kept", 2)
				for _, n := range late {
					n.delay.Store(int64(1500 * time.Millisecond))
				}
				if err := held.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, n := range late {
					n.delay.Store(int64(1500 * time.Millisecond))
				}
				go lockThenUnlock(first, "first")
				awaitHeld(t, srvs, "kept") // by the first waiter's attempt
				go lockThenUnlock(newWakeManager(t, srvs, fairOpts...), "second")
			}
			// The bound only keeps the test from hanging.
			bound := redistest.MeasurePace(t, srvs[0]).Stretch(10 * time.Second)
			select {
			case <-failed:
			case <-time.After(bound):
				t.Fatalf("the first waiter's attempt was not granted too late within %v", bound)
			}
			if got := <-order; got != "first" {
				t.Fatalf("after the first waiter's attempt failed, the %s waiter obtained the lock first; want the first, which keeps its place", got)
			}
			if got := <-order; got != "second" {
				t.Fatalf("then %s; want the second waiter", got)
			}
			awaitLine(t, srvs, "kept", 0)
		})
	}
}
