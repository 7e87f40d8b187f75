package dlm_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// slowRetry is a retry pace so slow that a waiter obtaining a lock well
// before it must have been woken by the release.
const slowRetry = 10 * time.Second

// newWakeManager returns a manager over its own connections to srvs, whose
// waiters retry only every 5 to 10 seconds unless woken.
func newWakeManager(t *testing.T, srvs []*redistest.Server, opts ...dlm.ManagerOption) *dlm.Manager {
	t.Helper()
	nodes := make([]driver.Node, len(srvs))
	for i, s := range srvs {
		nodes[i] = respNode(t, s.Addr(), "")
	}
	m, err := dlm.New(nodes, append([]dlm.ManagerOption{dlm.WithRetry(0, dlm.FixedBackoff(slowRetry))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// subscribers returns how many clients of s are in pub/sub mode.
func subscribers(t *testing.T, s *redistest.Server) int {
	t.Helper()
	v, err := s.Do("CLIENT", "LIST", "TYPE", "pubsub")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(strings.TrimSpace(v.(string)), "\n") + min(1, len(strings.TrimSpace(v.(string))))
}

// listening returns how many subscribers the wake channels of key have on
// s: its broadcast channel and the channels of the managers whose waiters
// it names.
func listening(t *testing.T, s *redistest.Server, key string) int64 {
	t.Helper()
	v, err := s.Do("PUBSUB", "CHANNELS", "redlock:{"+key+"}:wake*")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, ch := range v.([]any) {
		v, err := s.Do("PUBSUB", "NUMSUB", ch.(string))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := v.([]any)[1].(int64)
		total += n
	}
	return total
}

// awaitListening waits until every server has a subscriber for key's wake
// channel.
func awaitListening(t *testing.T, srvs []*redistest.Server, key string) {
	t.Helper()
	poll(t, srvs[0], fmt.Sprintf("a subscriber to %q's wake channel on every node", key), func() bool {
		for _, s := range srvs {
			if listening(t, s, key) == 0 {
				return false
			}
		}
		return true
	})
}

// pollBase is how long poll waits, on a quiet machine, for state that the
// nodes reach in a few round trips before it declares that they never will.
const pollBase = 5 * time.Second

// poll waits until cond holds, polling every 2ms, and fails t with what
// when it does not within pollBase stretched to the pace measured through s
// ([redistest.Pace.Stretch]). A wait that runs out while the machine has
// become slower than when it began is inconclusive rather than a failure:
// poll measures the pace again and waits on for the wider bound.
func poll(t *testing.T, s *redistest.Server, what string, cond func() bool) {
	t.Helper()
	p := redistest.MeasurePace(t, s)
	start := time.Now()
	for bound := p.Stretch(pollBase); !cond(); time.Sleep(2 * time.Millisecond) {
		if waited := time.Since(start); waited > bound {
			p = p.Max(redistest.MeasurePace(t, s))
			if wider := p.Stretch(pollBase); waited <= wider {
				bound = wider
				continue
			}
			t.Fatalf("no %s after %v (pace %v)", what, waited.Round(time.Millisecond), p)
		}
	}
}

// waiterID is the context key of the number a test gives each waiter, for
// attemptLog to tell the waiters of one manager apart.
type waiterID struct{}

// withWaiter returns ctx naming waiter i.
func withWaiter(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, waiterID{}, i)
}

// attempt is one acquire attempt as a Hook saw it.
type attempt struct {
	start, end time.Time
	won        bool
}

// attemptLog is a Hook that records each acquire attempt of a manager, by
// the waiter that its context names (0 when it names none).
type attemptLog struct {
	mu sync.Mutex
	by map[int][]attempt
}

func (a *attemptLog) OnEvent(ctx context.Context, e *dlm.Event) {
	if e.Kind != dlm.EventAttempt {
		return
	}
	i, _ := ctx.Value(waiterID{}).(int)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.by == nil {
		a.by = map[int][]attempt{}
	}
	a.by[i] = append(a.by[i], attempt{e.Start, e.Start.Add(e.Duration), e.Err == nil})
}

// of returns the attempts of waiter i so far.
func (a *attemptLog) of(i int) []attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]attempt(nil), a.by[i]...)
}

// checkWoken fails t unless waiter i of a manager whose retry pace is
// slowRetry obtained its lock otherwise than by that retry: by an attempt
// that began less than slowRetry/2 (the shortest retry, jitter included)
// after the end of its attempt before, which only a wake-up starts; or, when
// none of its attempts won, handed over within its manager. It says nothing
// of how soon: TestWakeOnClock proves that on the fake clock.
func checkWoken(t *testing.T, a *attemptLog, i int) {
	t.Helper()
	as := a.of(i)
	if len(as) == 0 || !as[len(as)-1].won {
		return // handed over within the manager, by a lock that won
	}
	if len(as) == 1 {
		return // its first attempt, which no retry timer began
	}
	prev, won := as[len(as)-2], as[len(as)-1]
	if gap := won.start.Sub(prev.end); gap >= slowRetry/2 {
		t.Errorf("waiter %d obtained the lock by an attempt %v after its previous one ended: by its retry (%v to %v), not woken by the release",
			i, gap.Round(time.Millisecond), slowRetry/2, slowRetry)
	}
}

// lockAsync starts m.Lock(key) and returns where its outcome and the time
// it returned arrive.
func lockAsync(m *dlm.Manager, key string) <-chan lockResult {
	res := make(chan lockResult, 1)
	go func() {
		l, err := m.Lock(context.Background(), key)
		res <- lockResult{l, err, time.Now()}
	}()
	return res
}

type lockResult struct {
	l   *dlm.Lock
	err error
	at  time.Time
}

// longHold is the TTL of the holders of the wake-up tests: long enough
// that a waiter never attempts at the end of the holder's validity (its
// turn, were the holder to have crashed), so that only a wake-up or its
// slowRetry can start its next attempt.
const longHold = time.Minute

// TestWaiterWokenByRelease checks that a client waiting for a lock held by
// another obtains it by the release, not at its next retry, and that this
// still holds after the waiter's subscriptions were cut and had to be made
// again. TestWakeOnClock proves on the fake clock that it obtains the lock
// at the instant of the release.
func TestWaiterWokenByRelease(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	log := &attemptLog{}
	holderM, waiterM := newWakeManager(t, srvs, dlm.WithTTL(longHold)), newWakeManager(t, srvs, dlm.WithHook(log))
	ctx := context.Background()
	for i, cut := range []bool{false, true} {
		t.Run(fmt.Sprintf("subscriptions cut: %v", cut), func(t *testing.T) {
			key := fmt.Sprintf("woken-%v", cut)
			held, err := holderM.Lock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			res := lockAsyncCtx(withWaiter(ctx, i), waiterM, key)
			awaitListening(t, srvs, key)
			if cut {
				for _, s := range srvs {
					if _, err := s.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
						t.Fatal(err)
					}
				}
				awaitListening(t, srvs, key) // made again
			}
			released := time.Now()
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-res
			if r.err != nil {
				t.Fatalf("waiter's Lock = %v", r.err)
			}
			defer r.l.Unlock(ctx)
			checkWoken(t, log, i)
			t.Logf("waiter obtained the lock %v after the release", r.at.Sub(released).Round(time.Microsecond))
		})
	}
}

// TestOneSubscriptionPerNode checks that a manager's many waiters, on many
// keys, share one subscription connection per node, and that each is woken
// by the release of its key (or handed the lock in its manager), none left
// to its retry.
func TestOneSubscriptionPerNode(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	log := &attemptLog{}
	holderM, waiterM := newWakeManager(t, srvs, dlm.WithTTL(longHold)), newWakeManager(t, srvs, dlm.WithHook(log))
	ctx := context.Background()
	const keys, perKey = 20, 2
	var held []*dlm.Lock
	type result struct {
		lockResult
		waiter int
	}
	results := make(chan result, keys*perKey)
	for i := range keys {
		key := fmt.Sprintf("shared-%d", i)
		l, err := holderM.Lock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		for j := range perKey {
			w := 1 + i*perKey + j
			go func() {
				l, err := waiterM.Lock(withWaiter(ctx, w), key)
				results <- result{lockResult{l, err, time.Now()}, w}
			}()
		}
	}
	for i := range keys {
		awaitListening(t, srvs, fmt.Sprintf("shared-%d", i))
	}
	for i, s := range srvs {
		if n := subscribers(t, s); n != 1 {
			t.Errorf("node %d has %d pub/sub connections for %d waiters on %d keys; want 1", i, n, keys*perKey, keys)
		}
	}
	for _, l := range held {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Every waiter obtains its lock by its first retry at the latest; the
	// bound only keeps a broken wake-up from hanging the test.
	p := redistest.MeasurePace(t, srvs[0])
	bound := p.Stretch(2 * slowRetry)
	deadline := time.After(bound)
	for range keys * perKey {
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("waiter's Lock = %v", r.err)
			}
			r.l.Unlock(ctx) // the next waiter for the key takes its turn
			checkWoken(t, log, r.waiter)
		case <-deadline:
			t.Fatalf("waiters still waiting %v after the releases (pace %v); want them woken", bound, p)
		}
	}
}

// TestHandOverServesOtherProcesses checks that goroutines of one manager
// passing a lock among themselves, without going back to the nodes, do not
// keep another process's waiter out: the lock is released on the nodes at
// some point, which lets that waiter in. TestLocalHandOver proves on the
// fake clock that a lock passed around for longer than a slice goes back to
// the nodes, and TestWakeOnClock that a release there wakes a waiter at once.
func TestHandOverServesOtherProcesses(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	log := &attemptLog{}
	busy, other := newWakeManager(t, srvs, dlm.WithTTL(10*time.Second)), newWakeManager(t, srvs, dlm.WithTTL(10*time.Second), dlm.WithHook(log))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	grants := make(chan struct{}, 1)
	const goroutines = 4
	for range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for ctx.Err() == nil {
				l, err := busy.Lock(ctx, "hot")
				if err != nil {
					return
				}
				select {
				case grants <- struct{}{}:
				default:
				}
				time.Sleep(time.Millisecond)
				l.Unlock(context.Background())
			}
		}()
	}
	for range 2 * goroutines { // the goroutines pass the lock around
		<-grants
	}
	// The other process's waiter is let in by a release, which checkWoken
	// tells from its retry; the bound only keeps the test from hanging.
	p := redistest.MeasurePace(t, srvs[0])
	bound := p.Stretch(2 * slowRetry)
	start := time.Now()
	lctx, lcancel := context.WithTimeout(context.Background(), bound)
	defer lcancel()
	l, err := other.Lock(lctx, "hot")
	if err != nil {
		t.Fatalf("other process's Lock while %d goroutines of one manager take turns = %v after %v (pace %v); want the lock",
			goroutines, err, time.Since(start).Round(time.Millisecond), p)
	}
	t.Logf("the other process waited %v (pace %v)", time.Since(start).Round(time.Millisecond), p)
	checkWoken(t, log, 0)
	l.Unlock(context.Background())
	cancel()
	for range goroutines {
		<-done
	}
}

// TestFencedLockNotHandedOver checks that a fenced lock is never passed to
// the next caller in the manager: each grant gets a greater fencing token
// from the nodes.
func TestFencedLockNotHandedOver(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	m := newWakeManager(t, srvs, dlm.WithFencing())
	ctx := context.Background()
	first, err := m.Lock(ctx, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	res := lockAsync(m, "fenced")
	poll(t, srvs[0], "second caller in the manager's line", func() bool { return dlm.Queued(m, "redlock:{fenced}") == 1 })
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.l.Unlock(ctx)
	if r.l.Token() <= first.Token() || r.l.Handle().Secret == first.Handle().Secret {
		t.Errorf("second grant: fencing token %d after %d, same secret: %v; want a greater fencing token and a new grant",
			r.l.Token(), first.Token(), r.l.Handle().Secret == first.Handle().Secret)
	}
}

// TestWokenBeforeReleaseReachedQuorum checks a waiter named by a release
// that has run on two nodes of five, which handed the key to it, but not yet
// on a majority: the other three still hold the key. The release reaches
// them within a node timeout, without naming the waiter there (as a release
// does on nodes whose key had expired); the waiter, named by fewer nodes than
// its quorum, obtains the lock by the attempt that naming starts, not at its
// next retry. TestWakeOnClock ("named by fewer nodes than the quorum")
// proves on the fake clock that this attempt comes exactly a node timeout
// after the first naming.
//
// The node timeout is the waiter's grace for the rest of the release to
// arrive: it is stretched to the pace measured on the run, and a run whose
// release took longer than half of it to reach the other nodes cannot tell
// a slow machine from a broken waiter; it is inconclusive, and the test
// runs again with the node timeout doubled.
func TestWokenBeforeReleaseReachedQuorum(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 5)
	p := redistest.MeasurePace(t, srvs[0])
	nodeTimeout := p.Stretch(time.Second) // the settle after the first naming
	for run := 0; ; run++ {
		key := fmt.Sprintf("half-released-%d", run)
		late, ok := wokenBeforeQuorum(t, srvs, key, nodeTimeout)
		if ok {
			return
		}
		if run == 3 {
			t.Fatalf("inconclusive %d times: the release took %v to reach the last nodes; want less than half the node timeout (%v)",
				run+1, late.Round(time.Millisecond), nodeTimeout)
		}
		t.Logf("inconclusive: the release took %v to reach the last nodes, more than half the node timeout (%v); again with %v",
			late.Round(time.Millisecond), nodeTimeout, 2*nodeTimeout)
		nodeTimeout *= 2
	}
}

// wokenBeforeQuorum runs TestWokenBeforeReleaseReachedQuorum's scenario on
// key with the waiter's node timeout. It reports how long the release took
// from its first naming to the last node, and whether that was soon enough
// for the run to tell.
func wokenBeforeQuorum(t *testing.T, srvs []*redistest.Server, key string, nodeTimeout time.Duration) (time.Duration, bool) {
	t.Helper()
	log := &attemptLog{}
	holderM := newWakeManager(t, srvs, dlm.WithTTL(longHold))
	waiterM := newWakeManager(t, srvs, dlm.WithHook(log), dlm.WithNodeTimeout(nodeTimeout))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// TryLock: the holder takes no place in line, so that the release the
	// test runs below, without the holder's waiter id, finds the waiter at
	// the head.
	held, err := holderM.TryLock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	awaitHeld(t, srvs, key) // by every node, not only the quorum TryLock returned at
	res := lockAsyncCtx(ctx, waiterM, key)
	awaitListening(t, srvs, key)
	awaitWaiting(t, srvs, key, 1)
	// The release as nodes 0 and 1 run it: the key handed to the waiter,
	// and the waiter named.
	rkey := "redlock:{" + key + "}"
	keys := append([]string{rkey}, script.LineKeys(rkey)...)
	args := []string{held.Handle().Secret, "", "0", "2000", "2000", script.ReleaseLock, script.Flag{Mode: script.Loud}.Arg()}
	named := time.Now()
	for _, s := range srvs[:2] {
		n := respNode(t, s.Addr(), "")
		if v, err := n.Eval(ctx, script.Release, keys, args); err != nil || v != int64(1) {
			t.Fatalf("the release on %s = %v, %v; want 1", s.Addr(), v, err)
		}
	}
	time.Sleep(nodeTimeout / 4)
	// The release reaches nodes 2 to 4, which do not name the waiter.
	for _, s := range srvs[2:] {
		if _, err := s.Do("DEL", rkey); err != nil {
			t.Fatal(err)
		}
	}
	if late := time.Since(named); late > nodeTimeout/2 {
		return late, false
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("waiter's Lock = %v", r.err)
	}
	defer r.l.Unlock(context.Background())
	checkWoken(t, log, 0)
	t.Logf("node timeout %v; %d attempts; lock obtained %v after two nodes named it", nodeTimeout, len(log.of(0)), r.at.Sub(named).Round(time.Microsecond))
	return 0, true
}
