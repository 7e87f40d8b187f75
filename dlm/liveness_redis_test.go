package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// The liveness of the wake-up, on real redis-servers (issue 29): a waiter
// never wakes itself, a release that reaches a quorum is never lost on its
// waiters, a waiter that gives up passes its turn on, and forged wake
// messages cost a bounded number of attempts.

// pace is the retry pace of the waiters whose attempts the tests count: a
// wait drawn from [pace/2, pace].
const pace = 100 * time.Millisecond

// paceBound is the most attempts a waiter blocked for window makes at its
// retry pace alone: one at once, one per half pace, and one for a wait
// under way at either end.
func paceBound(window time.Duration) int64 { return int64(window/(pace/2)) + 2 }

// counted returns a manager over its own connections to srvs whose waiters
// retry at pace, and the counter of its attempts. Its node timeout is 200ms
// stretched to the pace measured on the run, unless opts set one.
func counted(t *testing.T, srvs []*redistest.Server, opts ...dlm.ManagerOption) (*dlm.Manager, *attemptCounter) {
	t.Helper()
	c := &attemptCounter{}
	nodes := make([]driver.Node, len(srvs))
	for i, s := range srvs {
		nodes[i] = respNode(t, s.Addr(), "")
	}
	m, err := dlm.New(nodes, append([]dlm.ManagerOption{dlm.WithRetry(0, dlm.FixedBackoff(pace)), dlm.WithHook(c),
		dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], 200*time.Millisecond))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, c
}

// TestNoSelfWake checks, for each case in which a waiter's own failed
// attempt used to announce a release and so wake the waiter itself into the
// next attempt at the pace of a round trip, that a waiter blocked for a
// second makes no more attempts than its retry pace allows: a reader, and a
// semaphore's waiter, behind holders that lack the key on one node; a fair
// waiter in the same place; and a waiter of the mutex while a majority of
// the nodes is down, where the surviving nodes grant its attempts and none
// refuses them.
func TestNoSelfWake(t *testing.T) {
	t.Parallel()
	const window = time.Second
	// lacks deletes key on the last of srvs once the others hold it: a
	// grant returns at a quorum, and its request to the third node may
	// still be on its way.
	lacks := func(t *testing.T, srvs []*redistest.Server, key string) {
		t.Helper()
		poll(t, srvs[0], fmt.Sprintf("%s on every node but the last after its grant", key), func() bool {
			for _, s := range srvs[:len(srvs)-1] {
				n, err := s.Do("EXISTS", key)
				if err != nil {
					t.Fatal(err)
				}
				if n != int64(1) {
					return false
				}
			}
			return true
		})
		if _, err := srvs[len(srvs)-1].Do("DEL", key); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// run sets the case up on srvs and then blocks a waiter on m,
		// whose node timeout is nt, for window; extra is how many real
		// releases the waiter may hear.
		nodes int
		run   func(t *testing.T, srvs []*redistest.Server, m *dlm.Manager, holder *dlm.Manager, nt time.Duration) (extra int64)
	}{
		{"reader behind a writer lacking the key on one node", 3, func(t *testing.T, srvs []*redistest.Server, m, holder *dlm.Manager, nt time.Duration) int64 {
			if _, err := holder.Lock(context.Background(), "rw", dlm.WithTTL(time.Minute)); err != nil {
				t.Fatal(err)
			}
			lacks(t, srvs, "redlock:{rw}")
			ctx, cancel := context.WithTimeout(context.Background(), window)
			defer cancel()
			if _, err := m.RLock(ctx, "rw"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("RLock behind a writer = %v; want the deadline", err)
			}
			return 0
		}},
		{"permit behind a holder lacking it on one node", 3, func(t *testing.T, srvs []*redistest.Server, m, holder *dlm.Manager, nt time.Duration) int64 {
			hs, err := holder.Semaphore("sem", 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hs.Acquire(context.Background(), dlm.WithTTL(time.Minute)); err != nil {
				t.Fatal(err)
			}
			lacks(t, srvs, "redlock:{sem}"+script.PermitsSuffix)
			s, err := m.Semaphore("sem", 1)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), window)
			defer cancel()
			if _, err := s.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire behind a holder = %v; want the deadline", err)
			}
			return 0
		}},
		{"fair waiter behind a holder lacking the key on one node", 3, func(t *testing.T, srvs []*redistest.Server, m, holder *dlm.Manager, nt time.Duration) int64 {
			// The holder takes no place: the waiter heads the line.
			fair := dlm.WithFairness(dlm.Fairness{Expiry: 2 * nt})
			// (Its expiry suits its longer node timeout.)
			holderFair := dlm.WithFairness(dlm.Fairness{Expiry: 5 * time.Second})
			if _, err := holder.Lock(context.Background(), "fair", dlm.WithTTL(time.Minute), holderFair); err != nil {
				t.Fatal(err)
			}
			lacks(t, srvs, "redlock:{fair}")
			ctx, cancel := context.WithTimeout(context.Background(), window)
			defer cancel()
			if _, err := m.Lock(ctx, "fair", fair); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock behind a holder = %v; want the deadline", err)
			}
			return 0
		}},
		{"waiter while a majority of the nodes is down", 5, func(t *testing.T, srvs []*redistest.Server, m, holder *dlm.Manager, nt time.Duration) int64 {
			ctx := context.Background()
			held, err := holder.Lock(ctx, "outage", dlm.WithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(ctx, window)
			defer cancel()
			res := make(chan error, 1)
			go func() {
				_, err := m.Lock(ctx, "outage")
				res <- err
			}()
			awaitListening(t, srvs, "outage")
			for _, s := range srvs[2:] {
				s.Kill()
			}
			// The release reaches the two nodes left, which hand the key
			// to the waiter: its attempts are granted by both and refused
			// by none.
			if err := held.Unlock(context.Background()); !errors.Is(err, dlm.ErrUnavailable) {
				t.Fatalf("Unlock with 2 of 5 nodes = %v; want ErrUnavailable", err)
			}
			if err := <-res; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock with 2 of 5 nodes = %v; want the deadline", err)
			}
			return 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, tc.nodes)
			// The holder waits for every node: its grant is on all of
			// them, however busy the machine.
			holder, _ := counted(t, srvs, dlm.WithNodeTimeout(2*time.Second))
			nt := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
			m, attempts := counted(t, srvs, dlm.WithNodeTimeout(nt))
			extra := tc.run(t, srvs, m, holder, nt)
			if got, bound := attempts.n.Load(), paceBound(window)+extra; got > bound {
				t.Errorf("a waiter blocked for %v made %d attempts; want at most %d: its retry pace (%v) and %d per real release", window, got, bound, pace, extra)
			}
		})
	}
}

// TestReleaseReachesAWaiter checks that once a release reached a quorum of
// the nodes, a waiter obtains the lock woken, not at its retry, whatever
// the order in which the nodes hear the waiters: two waiters, each in a
// manager of its own whose requests reach the nodes a few milliseconds
// apart, race for every release, which reaches the third node late, with
// retries so slow that only a wake-up explains a grant. Woken by the first
// two nodes, each used to take one of them and be refused by the third; a
// rival's failed attempt was then taken for a grant, and both waiters slept
// out their retry while the lock was free. TestReleaseReachesAWaiterOnClock
// proves on the fake clock that each obtains the lock within five node
// timeouts; here the node timeout is stretched to the pace measured on the
// run, and a trial in which a waiter's retry came too close to its release
// to tell (see checkWoken) is not counted among the trials.
func TestReleaseReachesAWaiter(t *testing.T) {
	t.Parallel()
	const trials = 20
	srvs := redistest.StartServers(t, 3)
	nodeTimeout := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
	opts := []dlm.ManagerOption{dlm.WithRetry(0, dlm.FixedBackoff(slowRetry)), dlm.WithNodeTimeout(nodeTimeout)}
	managerWith := func(log *attemptLog, delays ...time.Duration) *dlm.Manager {
		nodes := make([]driver.Node, len(srvs))
		for i, s := range srvs {
			n := respNode(t, s.Addr(), "")
			nodes[i] = slowSubscriber{slowRequests{n, delays[i]}, n.(driver.Subscriber)}
		}
		m, err := dlm.New(nodes, append(opts, dlm.WithHook(log))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	holderNodes := make([]driver.Node, len(srvs))
	for i, s := range srvs {
		n := respNode(t, s.Addr(), "")
		holderNodes[i] = n
		if i == 2 {
			holderNodes[i] = slowRelease{n, 30 * time.Millisecond}
		}
	}
	holder, err := dlm.New(holderNodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	// Node 0 hears a first, node 1 hears b first: woken by those two, each
	// used to take one, and be refused by the third, which still held the
	// lock.
	logA, logB := &attemptLog{}, &attemptLog{}
	a := managerWith(logA, 0, 6*time.Millisecond, 3*time.Millisecond)
	b := managerWith(logB, 6*time.Millisecond, 0, 3*time.Millisecond)
	ctx := context.Background()
	conclusive := 0
	for trial := 0; conclusive < trials; trial++ {
		if trial == 2*trials {
			t.Fatalf("only %d of %d trials conclusive: the waiters' retries came too close to the releases", conclusive, trial)
		}
		key := fmt.Sprintf("race-%d", trial)
		held, err := holder.Lock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		ra, rb := lockAsyncCtx(withWaiter(ctx, trial), a, key), lockAsyncCtx(withWaiter(ctx, trial), b, key)
		awaitWaiting(t, srvs, key, 2)
		p := redistest.MeasurePace(t, srvs[0])
		// The bound only keeps a lost wake-up from hanging the test.
		bound := p.Stretch(2 * slowRetry)
		released := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		second, firstLog, secondLog := rb, logA, logB
		var r lockResult
		select {
		case r = <-ra:
		case r = <-rb:
			second, firstLog, secondLog = ra, logB, logA
		case <-time.After(bound):
			t.Fatalf("trial %d: no waiter obtained the lock %v after its release (pace %v)", trial, bound, p)
		}
		if r.err != nil {
			t.Fatalf("trial %d: Lock = %v", trial, r.err)
		}
		unlocked := time.Now()
		if err := r.l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case r = <-second:
		case <-time.After(bound):
			t.Fatalf("trial %d: the second waiter did not obtain the lock %v after the first released it (pace %v)", trial, bound, p)
		}
		if r.err != nil {
			t.Fatalf("trial %d: second Lock = %v", trial, r.err)
		}
		r.l.Unlock(ctx)
		p = p.Max(redistest.MeasurePace(t, srvs[0]))
		within := 5*nodeTimeout + wakeWithin(p)
		firstTold := checkWoken(t, firstLog, trial, released, within)
		if secondTold := checkWoken(t, secondLog, trial, unlocked, within); firstTold && secondTold {
			conclusive++
		}
	}
}

// TestWaiterTakesCrashedHoldersKeys checks that a waiter whose manager
// hears the releases, and whose retry pace is far slower than the TTL,
// obtains a lock whose holder crashed (it never releases: nothing is
// announced) once the keys run out, long before its retry (15 to 30 s
// here) could begin an attempt: a refusal says how long the refusing key
// lives. A waiter used to try again only at its retry pace then, or later.
// TestCrashedHolderOnClock proves on the fake clock that it obtains the
// lock within a node timeout of the holder's validity; here the TTL and the
// node timeout are stretched to the pace measured on the run.
func TestWaiterTakesCrashedHoldersKeys(t *testing.T) {
	t.Parallel()
	const waiterRetry = 30 * time.Second
	for _, nodes := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d nodes", nodes), func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, nodes)
			nodeTimeout := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
			ttl := max(time.Second, 5*nodeTimeout)
			holder, _ := counted(t, srvs, dlm.WithNodeTimeout(nodeTimeout))
			log := &attemptLog{}
			waiter, _ := counted(t, srvs, dlm.WithRetry(0, dlm.FixedBackoff(waiterRetry)), dlm.WithNodeTimeout(nodeTimeout), dlm.WithHook(log))
			ctx := context.Background()
			// The crashed holder: it neither extends nor releases.
			held, err := holder.Lock(ctx, "crash", dlm.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			runsOut := held.Until()
			// The waiter's first attempt is refused at once; its retry
			// could come waiterRetry/2 after that, at the earliest.
			wctx, cancel := context.WithTimeout(ctx, waiterRetry/2)
			defer cancel()
			r := <-lockAsyncCtx(wctx, waiter, "crash")
			if r.err != nil {
				for i, a := range log.of(0) {
					t.Logf("attempt %d: %v to %v: %v", i+1, a.start.Format(time.StampMilli), a.end.Format(time.StampMilli), a.err)
				}
				t.Fatalf("the waiter's Lock = %v; want the lock, once the crashed holder's keys ran out at %v, before its retry", r.err, runsOut.Format(time.StampMilli))
			}
			defer r.l.Unlock(ctx)
			if r.at.Before(runsOut) {
				t.Errorf("the waiter obtained the lock %v before the crashed holder's validity ended", runsOut.Sub(r.at))
			}
			t.Logf("TTL %v, node timeout %v: the waiter obtained the lock %v after the crashed holder's validity ended",
				ttl, nodeTimeout, r.at.Sub(runsOut).Round(time.Millisecond))
		})
	}
}

// slowRelease is a node whose release script runs d after it was sent.
type slowRelease struct {
	driver.Node
	d time.Duration
}

func (n slowRelease) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if s == script.Release {
		time.Sleep(n.d)
	}
	return n.Node.Eval(ctx, s, keys, args)
}

// slowRequests is a node that every request reaches d after it was sent.
type slowRequests struct {
	driver.Node
	d time.Duration
}

func (n slowRequests) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	time.Sleep(n.d)
	return n.Node.Eval(ctx, s, keys, args)
}

// slowSubscriber is a node of slow requests whose subscription hears as
// the node's does.
type slowSubscriber struct {
	slowRequests
	sub driver.Subscriber
}

func (n slowSubscriber) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	return n.sub.Subscribe(ctx, h)
}

// awaitWaiting waits until every server holds n waiters in key's line.
func awaitWaiting(t *testing.T, srvs []*redistest.Server, key string, n int64) {
	t.Helper()
	line := script.LineKeys("redlock:{" + key + "}")[0]
	poll(t, srvs[0], fmt.Sprintf("%d waiters of %q on every node", n, key), func() bool {
		for _, s := range srvs {
			v, err := s.Do("ZCARD", line)
			if err != nil {
				t.Fatal(err)
			}
			if v.(int64) < n {
				return false
			}
		}
		return true
	})
}

// TestWaiterGivingUpPassesItsTurn checks that a waiter whose context ends
// while the lock is handed to it, or just before, passes its turn to the
// waiter behind it, which obtains the lock woken, not at its retry: the
// waiter that gave up used to leave the line only a node timeout later,
// and silently, so a release in that window named it and the next one slept
// until its retry. In the fair mode and the default one.
// TestGiveUpPassesTurnOnClock proves on the fake clock that the second
// waiter obtains the lock within two node timeouts of the release; here the
// node timeout is stretched to the pace measured on the run, and a run in
// which the second waiter's retry came too close to the release to tell
// (see checkWoken) runs again.
func TestWaiterGivingUpPassesItsTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		opts         []dlm.ManagerOption
		releaseFirst bool // the release comes before the first waiter gives up
	}{
		{"default, gives up then released", nil, false},
		{"default, released then gives up", nil, true},
		{"fair, gives up then released", []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{})}, false},
		{"fair, released then gives up", []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, 3)
			nodeTimeout := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
			opts := append([]dlm.ManagerOption{dlm.WithNodeTimeout(nodeTimeout)}, tc.opts...)
			log := &attemptLog{}
			for run := range wakeRuns {
				if passesTurn(t, srvs, nodeTimeout, opts, log, tc.releaseFirst, run) {
					return
				}
			}
			t.Fatalf("inconclusive %d times: the second waiter's retry came too close to the release each time", wakeRuns)
		})
	}
}

// passesTurn runs TestWaiterGivingUpPassesItsTurn's scenario once, on a key
// of its own for run, with managers of opts (whose node timeout is
// nodeTimeout), and reports whether the run
// could tell a wake-up from a retry (see checkWoken).
func passesTurn(t *testing.T, srvs []*redistest.Server, nodeTimeout time.Duration, opts []dlm.ManagerOption, log *attemptLog, releaseFirst bool, run int) bool {
	t.Helper()
	key := fmt.Sprintf("turn-%d", run)
	ctx := context.Background()
	held, err := newWakeManager(t, srvs, opts...).Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	firstCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	first := make(chan lockResult, 1)
	firstM := newWakeManager(t, srvs, opts...)
	go func() {
		l, err := firstM.Lock(firstCtx, key)
		first <- lockResult{l, err, time.Now()}
	}()
	// A grant takes no place in line, fair or not.
	awaitWaiting(t, srvs, key, 1)
	second := lockAsyncCtx(withWaiter(ctx, run), newWakeManager(t, srvs, append(opts, dlm.WithHook(log))...), key)
	awaitWaiting(t, srvs, key, 2)
	p := redistest.MeasurePace(t, srvs[0])
	var released time.Time
	if releaseFirst {
		released = time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		giveUp()
	} else {
		giveUp()
		if r := <-first; r.err == nil {
			t.Fatalf("the first waiter obtained the lock while it was held")
		}
		released = time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if releaseFirst {
		// The first waiter may have obtained the lock before its
		// context ended: then it unlocks, as a program would.
		if r := <-first; r.err == nil {
			r.l.Unlock(ctx)
		}
	}
	// The bound only keeps a lost turn from hanging the test.
	bound := p.Stretch(2 * slowRetry)
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatalf("the second waiter's Lock = %v", r.err)
		}
		r.l.Unlock(ctx)
		p = p.Max(redistest.MeasurePace(t, srvs[0]))
		t.Logf("the second waiter obtained the lock %v after the release (pace %v)", r.at.Sub(released).Round(time.Millisecond), p)
	case <-time.After(bound):
		t.Fatalf("the second waiter did not obtain the lock %v after the release (pace %v)", bound, p)
	}
	// A key handed to the waiter that gave up stays reserved for it for
	// two node timeouts at most: the second waiter may wait that long for
	// its wake-up.
	return checkWoken(t, log, run, released, 2*nodeTimeout+wakeWithin(p))
}

// TestForgedWakeCost checks what forged wake messages cost a blocked waiter
// of the mutex, on real redis-servers: one message naming it on its
// manager's channel on every node costs it an attempt for the quorum's and
// at most one for each later one (one in all when they come within the
// grace, as TestLateNamingIgnored proves on the fake clock); a flood of them for
// a second costs it at most the attempts of a gap doubling from a
// millisecond to the node timeout, then one per node timeout
// (docs/security.md).
func TestForgedWakeCost(t *testing.T) {
	t.Parallel()
	// The node timeout is the waiter's grace for the nodes' messages of
	// one release: long enough, stretched to the pace measured on the run,
	// that a loaded machine delivers the three forged messages within it.
	const flood = time.Second
	srvs := redistest.StartServers(t, 3)
	nodeTimeout := pacedNodeTimeout(t, srvs[0], 250*time.Millisecond)
	ctx := context.Background()
	holder := newWakeManager(t, srvs)
	held, err := holder.Lock(ctx, "forged", dlm.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)
	attempts := &attemptCounter{}
	m := newWakeManager(t, srvs, dlm.WithHook(attempts), dlm.WithNodeTimeout(nodeTimeout))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := lockAsyncCtx(wctx, m, "forged")
	awaitWaiting(t, srvs, "forged", 1)
	line := script.LineKeys("redlock:{forged}")[0]
	v, err := srvs[0].Do("ZRANGE", line, "-1", "-1")
	if err != nil || len(v.([]any)) != 1 {
		t.Fatalf("ZRANGE %s = %v, %v; want the waiter", line, v, err)
	}
	id := v.([]any)[0].(string)
	channel := script.ManagerChannel("redlock:{forged}", id[:script.ManagerIDLen])
	forge := func() { publishAll(t, srvs, channel, id) }
	awaitListening(t, srvs, "forged")
	attempts.awaitQuiet(t, 2*nodeTimeout, time.Minute) // the waiter's first attempts are over
	before := attempts.n.Load()
	forge()
	attempts.awaitAttemptThenQuiet(t, srvs[0], before, 2*nodeTimeout)
	// One attempt when the nodes' messages arrive within the grace of the
	// first quorum's (TestLateNamingIgnored, on the fake clock); a busy
	// machine may deliver the last one later, which then costs one more:
	// never more than one per node.
	quorum := len(srvs)/2 + 1
	if got, most := attempts.n.Load()-before, int64(1+len(srvs)-quorum); got < 1 || got > most {
		t.Errorf("one forged wake message on every node cost the waiter %d attempts; want 1 to %d", got, most)
	}
	before = attempts.n.Load()
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			forge()
			time.Sleep(200 * time.Microsecond)
		}
	}()
	time.Sleep(flood)
	stop.Store(true)
	<-done
	doubling := int64(0)
	for g := time.Millisecond; g < nodeTimeout; g *= 2 {
		doubling++
	}
	if got, bound := attempts.n.Load()-before, doubling+int64(flood/nodeTimeout)+2; got > bound {
		t.Errorf("a flood of forged wake messages for %v cost the waiter %d attempts; want at most %d", flood, got, bound)
	}
	select {
	case r := <-res:
		t.Fatalf("the waiter's Lock returned (%v) while the lock was held", r.err)
	default:
	}
}

// awaitAttemptThenQuiet waits until c has counted more than before attempts
// (for a bound stretched to the pace measured through s, see poll), then
// until it has counted none for quiet: the attempts a message started are
// all counted then, however long the machine took to start the first.
func (c *attemptCounter) awaitAttemptThenQuiet(t *testing.T, s *redistest.Server, before int64, quiet time.Duration) {
	t.Helper()
	poll(t, s, "attempt after the message", func() bool { return c.n.Load() > before })
	c.awaitQuiet(t, quiet, time.Minute)
}

// lockAsyncCtx is lockAsync under ctx.
func lockAsyncCtx(ctx context.Context, m *dlm.Manager, key string) <-chan lockResult {
	res := make(chan lockResult, 1)
	go func() {
		l, err := m.Lock(ctx, key)
		res <- lockResult{l, err, time.Now()}
	}()
	return res
}

// TestForgedBroadcastCost checks that a forged release on a key's broadcast
// channel, published on every node, costs a reader blocked behind a writer
// one attempt: it used to cost three (the attempt and two rechecks).
func TestForgedBroadcastCost(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	nodeTimeout := pacedNodeTimeout(t, srvs[0], 250*time.Millisecond) // the grace: see TestForgedWakeCost
	ctx := context.Background()
	held, err := newWakeManager(t, srvs).Lock(ctx, "forged-rw", dlm.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)
	attempts := &attemptCounter{}
	m := newWakeManager(t, srvs, dlm.WithHook(attempts), dlm.WithNodeTimeout(nodeTimeout))
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go m.RLock(rctx, "forged-rw")
	awaitListening(t, srvs, "forged-rw")
	attempts.awaitQuiet(t, 2*nodeTimeout, time.Minute) // the reader's first attempts are over
	before := attempts.n.Load()
	publishAll(t, srvs, script.WakeChannel("redlock:{forged-rw}"), script.WakeRelease+"1")
	attempts.awaitAttemptThenQuiet(t, srvs[0], before, 2*nodeTimeout)
	if got := attempts.n.Load() - before; got != 1 {
		t.Errorf("a forged release on every node cost a blocked reader %d attempts; want 1", got)
	}
}

// publishAll publishes payload on channel on every server at once, as a
// release reaches the nodes: one after the other, a loaded machine could
// spread the messages over more than a waiter's grace, which makes them
// two releases.
func publishAll(t *testing.T, srvs []*redistest.Server, channel, payload string) {
	t.Helper()
	errs := make(chan error, len(srvs))
	for _, s := range srvs {
		go func() {
			_, err := s.Do("PUBLISH", channel, payload)
			errs <- err
		}()
	}
	for range srvs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
