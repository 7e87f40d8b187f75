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
	err        error // nil when it won
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
	a.by[i] = append(a.by[i], attempt{e.Start, e.Start.Add(e.Duration), e.Err})
}

// of returns the attempts of waiter i so far.
func (a *attemptLog) of(i int) []attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]attempt(nil), a.by[i]...)
}

// checkWoken checks that waiter i of a manager whose retry pace is
// slowRetry, which obtained its lock, was woken by the release of its key
// that began at released, not left to its retry. It says nothing of how
// soon: TestWakeOnClock proves that on the fake clock.
//
// The first attempt the waiter began after the release tells, by its
// distance from the end of the attempt before (which started the retry
// timer, at least slowRetry/2 with jitter):
//   - less than slowRetry/2: no retry timer began it, a wake-up did. The
//     waiter was woken even if that attempt failed (a node that did not
//     answer within the node timeout on a loaded machine) and a later
//     attempt won.
//   - slowRetry/2 or more, while the release began more than within before
//     the retry could first fire: a woken waiter had within (the time this
//     machine may take, at the pace measured, for the wake-up to reach it
//     and start an attempt, plus any grace the waiter waits on purpose) and
//     began no attempt: it was left to its retry, and t fails.
//   - slowRetry/2 or more otherwise, or no attempt began after the release
//     (one in flight then won): the release and the retry came too close
//     together to tell them apart. checkWoken returns false, and the caller
//     runs its scenario again.
//
// A waiter with no attempt that won was handed the lock within its manager
// by one that won; a lock obtained by a waiter's first attempt began no
// retry timer. Both are conclusive. released zero stands for a release at
// an unknown time, taken to be the end of the attempt before the one that
// won.
func checkWoken(t *testing.T, a *attemptLog, i int, released time.Time, within time.Duration) bool {
	t.Helper()
	as := a.of(i)
	if len(as) == 0 || as[len(as)-1].err != nil {
		return true // handed over within the manager, by a lock that won
	}
	if len(as) == 1 {
		return true // its first attempt, which no retry timer began
	}
	if released.IsZero() {
		released = as[len(as)-2].end
	}
	k := 1
	for k < len(as) && as[k].start.Before(released) {
		k++
	}
	if k == len(as) {
		t.Logf("waiter %d: inconclusive, its attempt from %v before the release to %v after it won",
			i, released.Sub(as[k-1].start).Round(time.Millisecond), as[k-1].end.Sub(released).Round(time.Millisecond))
		return false
	}
	prev, next := as[k-1], as[k]
	gap := next.start.Sub(prev.end)
	if gap < slowRetry/2 {
		if k < len(as)-1 {
			t.Logf("waiter %d: woken by the release for attempt %d, which failed (%v); attempt %d won", i, k+1, next.err, len(as))
		}
		return true
	}
	retry := prev.end.Add(slowRetry / 2)
	if had := retry.Sub(released); had > within {
		t.Errorf("waiter %d obtained the lock by an attempt %v after its previous one ended: by its retry (%v to %v), not woken by the release, which came %v before that retry could fire (a woken waiter needs %v here)",
			i, gap.Round(time.Millisecond), slowRetry/2, slowRetry, had.Round(time.Millisecond), within)
		return true
	}
	t.Logf("waiter %d: inconclusive, its retry could fire %v after the release, less than the %v a wake-up may take here",
		i, retry.Sub(released).Round(time.Millisecond), within)
	return false
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

// wakeRuns is how many times a wake-up test on redis-server runs its
// scenario before a run where a release and a retry came too close together
// to tell apart (see checkWoken) fails it as inconclusive.
const wakeRuns = 4

// wakeWithin is how long, at pace p, a woken waiter may take on redis-server
// from the start of the release to the start of its attempt: a second, or
// more on a slower machine. checkWoken blames the retry only for a release
// that came longer than that before the retry could fire.
func wakeWithin(p redistest.Pace) time.Duration { return p.Stretch(time.Second) }

// TestWaiterWokenByRelease checks that a client waiting for a lock held by
// another obtains it by the release, not at its next retry, and that this
// still holds after the waiter's subscriptions were cut and had to be made
// again. TestWakeOnClock proves on the fake clock that it obtains the lock
// at the instant of the release.
func TestWaiterWokenByRelease(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	log := &attemptLog{}
	nt := dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], derivedNodeTimeout))
	holderM, waiterM := newWakeManager(t, srvs, dlm.WithTTL(longHold), nt), newWakeManager(t, srvs, dlm.WithHook(log), nt)
	ctx := context.Background()
	for i, cut := range []bool{false, true} {
		t.Run(fmt.Sprintf("subscriptions cut: %v", cut), func(t *testing.T) {
			for run := range wakeRuns {
				w := i*wakeRuns + run
				key := fmt.Sprintf("woken-%v-%d", cut, run)
				held, err := holderM.Lock(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				res := lockAsyncCtx(withWaiter(ctx, w), waiterM, key)
				awaitListening(t, srvs, key)
				if cut {
					for _, s := range srvs {
						if _, err := s.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
							t.Fatal(err)
						}
					}
					awaitListening(t, srvs, key) // made again
				}
				p := redistest.MeasurePace(t, srvs[0])
				released := time.Now()
				if err := held.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				r := <-res
				if r.err != nil {
					t.Fatalf("waiter's Lock = %v", r.err)
				}
				r.l.Unlock(ctx)
				p = p.Max(redistest.MeasurePace(t, srvs[0]))
				t.Logf("waiter obtained the lock %v after the release (pace %v)", r.at.Sub(released).Round(time.Microsecond), p)
				if checkWoken(t, log, w, released, wakeWithin(p)) {
					return
				}
			}
			t.Fatalf("inconclusive %d times: the waiter's retry came too close to the release each time", wakeRuns)
		})
	}
}

// TestOneSubscriptionPerNode checks that a manager's many waiters, on many
// keys, share one subscription connection per node, and that each is woken
// by the release of its key (or handed the lock in its manager), none left
// to its retry. A run in which a waiter's retry came too close to its
// release to tell which began its attempt (see checkWoken) is run again,
// with new keys.
func TestOneSubscriptionPerNode(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	log := &attemptLog{}
	nt := dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], derivedNodeTimeout))
	holderM, waiterM := newWakeManager(t, srvs, dlm.WithTTL(longHold), nt), newWakeManager(t, srvs, dlm.WithHook(log), nt)
	for run := range wakeRuns {
		if sharedSubscription(t, srvs, holderM, waiterM, log, run) {
			return
		}
	}
	t.Fatalf("inconclusive %d times: some waiter's retry came too close to its release each time", wakeRuns)
}

// sharedSubscription runs TestOneSubscriptionPerNode's scenario once, on
// keys and waiter numbers of its own for run, and reports whether every
// waiter's wake-up was conclusive.
func sharedSubscription(t *testing.T, srvs []*redistest.Server, holderM, waiterM *dlm.Manager, log *attemptLog, run int) bool {
	t.Helper()
	ctx := context.Background()
	const keys, perKey = 20, 2
	type result struct {
		lockResult
		key, waiter int
	}
	var held []*dlm.Lock
	results := make(chan result, keys*perKey)
	keyName := func(i int) string { return fmt.Sprintf("shared-%d-%d", run, i) }
	for i := range keys {
		l, err := holderM.Lock(ctx, keyName(i))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		for j := range perKey {
			w := 1 + (run*keys+i)*perKey + j
			go func() {
				l, err := waiterM.Lock(withWaiter(ctx, w), keyName(i))
				results <- result{lockResult{l, err, time.Now()}, i, w}
			}()
		}
	}
	// One poll for every key: the sooner the releases come, the fewer
	// waiters reach a retry before them.
	poll(t, srvs[0], "a subscriber to every key's wake channel on every node", func() bool {
		for i := range keys {
			for _, s := range srvs {
				if listening(t, s, keyName(i)) == 0 {
					return false
				}
			}
		}
		return true
	})
	for i, s := range srvs {
		if n := subscribers(t, s); n != 1 {
			t.Errorf("node %d has %d pub/sub connections for %d waiters on %d keys; want 1", i, n, keys*perKey, keys)
		}
	}
	p := redistest.MeasurePace(t, srvs[0])
	released := make([]time.Time, keys) // the last release of each key
	for i, l := range held {
		released[i] = time.Now()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Every waiter obtains its lock by its first retry at the latest; the
	// bound only keeps a broken wake-up from hanging the test.
	bound := p.Stretch(2 * slowRetry)
	deadline := time.After(bound)
	type check struct {
		waiter   int
		released time.Time
	}
	var checks []check
	for range keys * perKey {
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("waiter's Lock = %v", r.err)
			}
			checks = append(checks, check{r.waiter, released[r.key]})
			released[r.key] = time.Now()
			r.l.Unlock(ctx) // the next waiter for the key takes its turn
		case <-deadline:
			t.Fatalf("waiters still waiting %v after the releases (pace %v); want them woken", bound, p)
		}
	}
	p = p.Max(redistest.MeasurePace(t, srvs[0]))
	t.Logf("run %d: pace %v", run, p)
	conclusive := true
	for _, c := range checks {
		conclusive = checkWoken(t, log, c.waiter, c.released, wakeWithin(p)) && conclusive
	}
	return conclusive
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
	checkWoken(t, log, 0, time.Time{}, 0)
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
		why := wokenBeforeQuorum(t, srvs, key, nodeTimeout)
		if why == "" {
			return
		}
		if run == wakeRuns-1 {
			t.Fatalf("inconclusive %d times: %s", run+1, why)
		}
		t.Logf("inconclusive: %s; again with a node timeout of %v", why, 2*nodeTimeout)
		nodeTimeout *= 2
	}
}

// wokenBeforeQuorum runs TestWokenBeforeReleaseReachedQuorum's scenario on
// key with the waiter's node timeout. It returns why the run could not tell
// a slow machine from a broken waiter, "" when it could: the release took
// longer than half the node timeout to reach the last nodes, or the
// waiter's retry could fire too soon after the release (see checkWoken).
func wokenBeforeQuorum(t *testing.T, srvs []*redistest.Server, key string, nodeTimeout time.Duration) string {
	t.Helper()
	log := &attemptLog{}
	holderM := newWakeManager(t, srvs, dlm.WithTTL(longHold), holdEverywhere(t, srvs[0]))
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
	p := redistest.MeasurePace(t, srvs[0])
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
		return fmt.Sprintf("the release took %v to reach the last nodes, more than half the node timeout (%v)", late.Round(time.Millisecond), nodeTimeout)
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("waiter's Lock = %v", r.err)
	}
	defer r.l.Unlock(context.Background())
	p = p.Max(redistest.MeasurePace(t, srvs[0]))
	t.Logf("node timeout %v; %d attempts; lock obtained %v after two nodes named it (pace %v)", nodeTimeout, len(log.of(0)), r.at.Sub(named).Round(time.Microsecond), p)
	// The waiter waits a node timeout after the first naming on purpose.
	if !checkWoken(t, log, 0, named, nodeTimeout+wakeWithin(p)) {
		return "the waiter's retry could fire too soon after the release to tell it from a wake-up"
	}
	return ""
}
