package dlmtest

import (
	"context"
	"errors"
	"fmt"
	"github.com/dlmgo/redlock/dlm/redistest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// Dial connects a node to the redis-server at addr ("127.0.0.1:PORT"). The
// suite closes the node.
type Dial func(t *testing.T, addr string) driver.Node

// suitePrefix is the key prefix the integration suite locks under, so it can
// look at the keys on the servers.
const suitePrefix = "dlmtest:"

// TestManager runs the manager-level integration suite through dial on 1, 3
// and 5 real redis-server processes that it starts and stops itself: mutual
// exclusion under contention, release of a failed attempt on every node,
// survival of a minority of dead nodes, a clean failure when a majority is
// dead, the rules for expired locks, and Do under faults: a frozen majority
// cancels fn's context before the validity ends, a job three times the TTL
// keeps its lock against 16 rivals, and cancelling the caller releases; and
// a waiter is woken by the release of the lock it waits for (see
// [driver.Subscriber]). Backend modules run it; so can the author of a
// custom adapter. It checks that no goroutine outlives
// [dlm.Manager.Close] and the nodes' Close. Its subtests run in parallel
// (t.Parallel), each on servers of its own, so dial must be safe to call
// from several goroutines at once; go test's -parallel flag bounds them.
func TestManager(t *testing.T, dial Dial) {
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name string
				fn   func(*testing.T, *cluster)
			}{
				{"MutualExclusion", testMutualExclusion},
				{"ReleaseOnFailure", testReleaseOnFailure},
				{"SurvivesMinorityDown", testSurvivesMinorityDown},
				{"FailsCleanlyWithMajorityDown", testFailsWithMajorityDown},
				{"ExtendAfterExpiry", testExtendAfterExpiry},
				{"UnlockAfterExpiryKeepsNewHolder", testUnlockAfterExpiry},
				{"PausedMajorityCancelsDo", testPausedMajorityCancelsDo},
				{"DoOutlivesTTL", testDoOutlivesTTL},
				{"CallerCancelReleases", testCallerCancelReleases},
				{"WakeOnRelease", testWakeOnRelease},
				{"List", testList},
				{"ForceUnlock", testForceUnlock},
				{"Owner", testOwner},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					c := startCluster(t, n, dial)
					tc.fn(t, c)
					c.close(t)
				})
			}
		})
	}
}

// target is what one of the suite's nodes runs on: a [Server], or a
// [RedisCluster] as a whole.
type target interface {
	Addr() string
	Do(args ...string) (any, error)
	Kill()
	Pause()
	Resume()
}

// processes returns the redis-server processes of tg, and whether they are
// the masters of a Redis Cluster.
func processes(tg target) (servers []*redistest.Server, cluster bool) {
	if c, ok := tg.(*redistest.RedisCluster); ok {
		return c.Masters, true
	}
	return []*redistest.Server{tg.(*redistest.Server)}, false
}

// cluster is a manager over its own redis-server processes: one per node,
// or one Redis Cluster per node.
type cluster struct {
	servers []target
	nodes   []driver.Node
	m       *dlm.Manager
	snap    *leakcheck.Snapshot
	dial    Dial
	opts    []dlm.ManagerOption
	others  []*dlm.Manager // see client
	otherNs []driver.Node
	// pace is the machine's pace through the cluster's servers when they
	// had started, and timeout the managers' node timeout taken from it
	// (see startOn).
	pace    redistest.Pace
	timeout time.Duration
}

// Timing of the suite's managers: suiteNodeTimeout is their node timeout on
// a quiet machine, stretched to the pace measured on the cluster's servers
// (see [redistest.Pace.Stretch]), so that a busy machine does not turn
// healthy nodes into failures; the TTL is suiteTTL, or suiteTTLPerTimeout
// node timeouts where that is more.
const (
	suiteNodeTimeout   = 500 * time.Millisecond
	suiteTTL           = 5 * time.Second
	suiteTTLPerTimeout = 10
)

func startCluster(t *testing.T, n int, dial Dial, opts ...dlm.ManagerOption) *cluster {
	t.Helper()
	servers := redistest.StartServers(t, n)
	targets := make([]target, n)
	for i, s := range servers {
		targets[i] = s
	}
	return startOn(t, targets, dial, opts...)
}

// startOn returns a manager over a node dialled for each target.
func startOn(t *testing.T, targets []target, dial Dial, opts ...dlm.ManagerOption) *cluster {
	t.Helper()
	n := len(targets)
	c := &cluster{servers: targets, snap: leakcheck.Scoped(), dial: dial}
	for _, tg := range targets {
		procs, _ := processes(tg)
		for _, s := range procs {
			c.pace = c.pace.Max(redistest.MeasurePace(t, s))
		}
	}
	c.timeout = c.pace.Stretch(suiteNodeTimeout)
	ttl := max(suiteTTL, suiteTTLPerTimeout*c.timeout)
	t.Logf("pace %v: node timeout %v, TTL %v", c.pace, c.timeout.Round(time.Millisecond), ttl.Round(time.Millisecond))
	for _, s := range c.servers {
		c.nodes = append(c.nodes, dial(t, s.Addr()))
	}
	c.opts = append([]dlm.ManagerOption{
		dlm.WithKeyPrefix(suitePrefix), dlm.WithTTL(ttl), dlm.WithNodeTimeout(c.timeout),
	}, opts...)
	m, err := dlm.New(c.nodes, c.opts...)
	if err != nil {
		t.Fatalf("dlm.New over %d nodes: %v", n, err)
	}
	c.m = m
	return c
}

// client returns another manager over the same servers, through nodes of its
// own, as another process would have: a manager's own waiting callers line
// up in the manager, so contention between managers is what exercises the
// nodes' votes. The cluster closes it.
func (c *cluster) client(t *testing.T) *dlm.Manager {
	t.Helper()
	nodes := make([]driver.Node, len(c.servers))
	for i, s := range c.servers {
		nodes[i] = c.dial(t, s.Addr())
	}
	c.otherNs = append(c.otherNs, nodes...)
	m, err := dlm.New(nodes, c.opts...)
	if err != nil {
		t.Fatalf("dlm.New over %d nodes: %v", len(nodes), err)
	}
	c.others = append(c.others, m)
	return m
}

// close closes the manager and the nodes and checks that nothing they
// started is left running.
func (c *cluster) close(t *testing.T) {
	t.Helper()
	for _, m := range append(c.others, c.m) {
		if err := m.Close(); err != nil {
			t.Errorf("Manager.Close: %v", err)
		}
	}
	for _, n := range append(c.otherNs, c.nodes...) {
		if err := n.Close(); err != nil {
			t.Errorf("node %s Close: %v", n.Addr(), err)
		}
	}
	// rueidis' cluster client closes the connections a refresh replaced
	// five seconds later, on a goroutine of its own: 10 s covers it.
	c.snap.Check(t, 10*time.Second)
}

// quorum is the majority of the cluster.
func (c *cluster) quorum() int { return len(c.servers)/2 + 1 }

// value returns what server i holds under the lock key of key, or nil.
func (c *cluster) value(t *testing.T, i int, key string) any {
	t.Helper()
	v, err := c.servers[i].Do("GET", suitePrefix+"{"+key+"}")
	if err != nil {
		t.Fatalf("GET on %s: %v", c.servers[i].Addr(), err)
	}
	return v
}

// testMutualExclusion runs 32 goroutines over 4 managers, as 4 processes of
// 8 goroutines would, taking turns on one key: never two holders, and every
// goroutine gets its turns. An Unlock that too few nodes answered in time
// (ErrUnavailable, on a busy machine) leaves the keys to expire; any other
// Unlock error fails the test.
func testMutualExclusion(t *testing.T, c *cluster) {
	const managers, workers, rounds = 4, 32, 4
	ms := []*dlm.Manager{c.m}
	for len(ms) < managers {
		ms = append(ms, c.client(t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var holders, grants, unanswered atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := ms[w%managers]
			for r := 0; r < rounds; r++ {
				l, err := m.Lock(ctx, "mutex", dlm.WithRetry(0, dlm.ExponentialBackoff(time.Millisecond, 20*time.Millisecond)))
				if err != nil {
					errs <- fmt.Errorf("lock: %w", err)
					return
				}
				if h := holders.Add(1); h != 1 {
					errs <- fmt.Errorf("%d holders at once", h)
				}
				grants.Add(1)
				time.Sleep(100 * time.Microsecond)
				holders.Add(-1)
				if time.Now().After(l.Until()) {
					errs <- errors.New("held past its validity; the test's timing is too tight")
				}
				if err := l.Unlock(ctx); err != nil {
					if !errors.Is(err, dlm.ErrUnavailable) {
						errs <- fmt.Errorf("unlock: %w", err)
						return
					}
					// Too few nodes answered in time on a busy machine:
					// the keys expire within the TTL, and the next
					// grant waits for them. Exclusion is what is checked.
					unanswered.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := unanswered.Load(); n > 0 {
		t.Logf("%d unlocks not answered by a quorum in time; their keys expired instead", n)
	}
	if got := grants.Load(); got != workers*rounds {
		t.Errorf("%d grants; want %d", got, workers*rounds)
	}
}

func testReleaseOnFailure(t *testing.T, c *cluster) {
	ctx := context.Background()
	// Another holder has the key on a quorum of nodes; the rest are free.
	for i := 0; i < c.quorum(); i++ {
		if _, err := c.servers[i].Do("SET", suitePrefix+"{busy}", "someone-else", "PX", "10000"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.m.TryLock(ctx, "busy")
	if !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryLock of a key held on %d of %d nodes = %v; want ErrNotObtained", c.quorum(), len(c.servers), err)
	}
	var qerr *dlm.QuorumError
	if !errors.As(err, &qerr) || qerr.Against != c.quorum() || qerr.Failed != 0 || qerr.For > len(c.servers)-c.quorum() {
		t.Fatalf("vote = %+v; want %d against, none failed, at most %d for", qerr, c.quorum(), len(c.servers)-c.quorum())
	}
	// The free nodes may not have answered when the vote was decided; their
	// release follows their reply, so wait for it.
	for i := range c.servers {
		want := any(nil)
		if i < c.quorum() {
			want = "someone-else"
		}
		got := c.await(t, func() bool { return c.value(t, i, "busy") == want })
		if !got {
			t.Errorf("after the failed attempt node %d holds %v; want %v (the attempt must be released everywhere)", i, c.value(t, i, "busy"), want)
		}
	}
}

// patience bounds the waits of the suite for what must happen soon on a
// healthy cluster (a late node's reply, a release): how long a broken
// build takes to fail, not a claim about when. It is generous, and grows
// with the node timeout taken from the pace.
func (c *cluster) patience() time.Duration { return max(10*time.Second, 20*c.timeout) }

// await polls ok every few milliseconds until it holds, for up to
// [cluster.patience], and reports whether it did.
func (c *cluster) await(t *testing.T, ok func() bool) bool {
	t.Helper()
	for deadline := time.Now().Add(c.patience()); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

func testSurvivesMinorityDown(t *testing.T, c *cluster) {
	ctx := context.Background()
	down := len(c.servers) - c.quorum()
	for i := 0; i < down; i++ {
		c.servers[i].Kill()
	}
	l, err := c.m.TryLock(ctx, "minority")
	if err != nil {
		t.Fatalf("TryLock with %d of %d nodes down: %v", down, len(c.servers), err)
	}
	if _, err := c.m.TryLock(ctx, "minority"); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("second TryLock with %d nodes down = %v; want ErrNotObtained", down, err)
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Errorf("Extend with %d nodes down: %v", down, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock with %d nodes down: %v", down, err)
	}
	for i := down; i < len(c.servers); i++ {
		if v := c.value(t, i, "minority"); v != nil {
			t.Errorf("node %d still holds the key after Unlock", i)
		}
	}
}

// testFailsWithMajorityDown kills a majority of the nodes: TryLock fails
// with ErrUnavailable naming the first dead node, at once rather than after
// retries, and Lock gives up when its context ends. How soon is proven on
// virtual time (TestFailFast and TestLockContextEnds in package dlm); here
// the bounds are a few node timeouts of this run's pace, which a build that
// retries or waits out its context overruns.
func testFailsWithMajorityDown(t *testing.T, c *cluster) {
	for i := 0; i < c.quorum(); i++ {
		c.servers[i].Kill()
	}
	start := time.Now()
	_, err := c.m.TryLock(context.Background(), "majority")
	took := time.Since(start)
	if !errors.Is(err, dlm.ErrUnavailable) || errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryLock with %d of %d nodes down = %v; want ErrUnavailable, not ErrNotObtained", c.quorum(), len(c.servers), err)
	}
	var nerr *dlm.NodeError
	if !errors.As(err, &nerr) || nerr.Node != c.servers[0].Addr() {
		t.Errorf("errors.As(err, *NodeError) = %v; want the first dead node %s", nerr, c.servers[0].Addr())
	}
	if limit := max(3*time.Second, 6*c.timeout); took > limit {
		t.Errorf("TryLock took %v with dead nodes; want a fast failure, within %v (six node timeouts)", took, limit)
	}
	const deadline = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start = time.Now()
	_, err = c.m.Lock(ctx, "majority")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock with a majority down and a %v deadline = %v; want context.DeadlineExceeded", deadline, err)
	}
	if d, limit := time.Since(start), max(3*time.Second, deadline+6*c.timeout); d > limit {
		t.Errorf("Lock returned %v after it began, its deadline %v; want within %v", d, deadline, limit)
	}
}

// connect takes and releases key's lock with the suite's node timeout, so
// that every node has dialed (a cluster node has also read its map of
// slots) before an attempt whose node timeout is a round trip's margin,
// too short for a first dial on a loaded machine.
func (c *cluster) connect(t *testing.T, key string) {
	t.Helper()
	ctx := context.Background()
	l, err := c.m.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("TryLock(%q) to connect the nodes: %v", key, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock(%q) after connecting the nodes: %v", key, err)
	}
}

// shortTimeout is the node timeout, on a quiet machine, of the locks that
// the suite lets expire; their TTL is shortTTLPerTimeout times the node
// timeout in effect.
const (
	shortTimeout       = 100 * time.Millisecond
	shortTTLPerTimeout = 2
)

// shortLock takes key's lock with a TTL short enough to wait out: a node
// timeout of shortTimeout stretched to the cluster's pace, and a TTL of
// shortTTLPerTimeout node timeouts. A loaded machine may still make the
// attempt miss its quorum, which says nothing of what the callers test:
// that is inconclusive, and the attempt is made again, once what it may
// have left behind expired, with the node timeout (and the TTL) doubled, up
// to three times. It returns the lock, its TTL, and when it was granted.
func (c *cluster) shortLock(t *testing.T, key string) (*dlm.Lock, time.Duration, time.Time) {
	t.Helper()
	const tries = 3
	timeout := c.pace.Stretch(shortTimeout)
	for try := 1; ; try++ {
		ttl := shortTTLPerTimeout * timeout
		l, err := c.m.TryLock(context.Background(), key, dlm.WithTTL(ttl), dlm.WithNodeTimeout(timeout))
		if err == nil {
			return l, ttl, time.Now()
		}
		if try == tries {
			t.Fatalf("TryLock(%q) with a %v TTL and a %v node timeout = %v; want the lock (attempt %d of %d, pace %v)", key, ttl, timeout, err, try, tries, c.pace)
		}
		t.Logf("inconclusive: TryLock(%q) with a %v TTL and a %v node timeout = %v; trying again with a %v node timeout", key, ttl, timeout, err, 2*timeout)
		time.Sleep(ttl)
		timeout *= 2
	}
}

// awaitExpiry waits until l, granted at granted with ttl, has expired: its
// validity ended, every key its grant set has outlived the TTL, and no node
// holds key (a node that answered after the quorum sets its key later).
func (c *cluster) awaitExpiry(t *testing.T, l *dlm.Lock, key string, ttl time.Duration, granted time.Time) {
	t.Helper()
	time.Sleep(time.Until(later(l.Until(), granted.Add(ttl))) + time.Millisecond)
	for i := range c.servers {
		if !c.await(t, func() bool { return c.value(t, i, key) == nil }) {
			t.Fatalf("node %d still holds %q %v after the lock's TTL %v", i, key, time.Since(granted).Round(time.Millisecond), ttl)
		}
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// testExtendAfterExpiry checks that Extend of a lock whose keys expired
// fails with ErrLockLost and sets no key again. (That Extend after the
// validity sends nothing is proven on virtual time: TestExtendAfterValidity
// in package dlm.)
func testExtendAfterExpiry(t *testing.T, c *cluster) {
	ctx := context.Background()
	c.connect(t, "short")
	l, ttl, granted := c.shortLock(t, "short")
	c.awaitExpiry(t, l, "short", ttl, granted)
	if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, dlm.ErrLockLost) {
		t.Fatalf("Extend after expiry = %v; want ErrLockLost", err)
	}
	for i := range c.servers {
		if v := c.value(t, i, "short"); v != nil {
			t.Errorf("node %d holds the key again after Extend of an expired lock", i)
		}
	}
}

// testUnlockAfterExpiry checks that Unlock of a lock whose keys expired and
// went to a new holder fails with ErrLockLost and leaves the new holder's
// keys on every node.
func testUnlockAfterExpiry(t *testing.T, c *cluster) {
	ctx := context.Background()
	c.connect(t, "handover")
	a, ttl, granted := c.shortLock(t, "handover")
	c.awaitExpiry(t, a, "handover", ttl, granted)
	b, err := c.m.TryLock(ctx, "handover")
	if err != nil {
		t.Fatalf("TryLock after the first holder expired: %v", err)
	}
	// TryLock returns on a quorum; let the slower nodes take the key too,
	// so that the check below sees every node.
	for i := range c.servers {
		c.await(t, func() bool { return c.value(t, i, "handover") != nil })
	}
	if err := a.Unlock(ctx); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Unlock of the expired lock = %v; want ErrLockLost", err)
	}
	for i := range c.servers {
		if v := c.value(t, i, "handover"); v == nil {
			t.Errorf("node %d lost the new holder's key to the old holder's Unlock", i)
		}
	}
	if err := b.Unlock(ctx); err != nil {
		t.Errorf("new holder's Unlock: %v", err)
	}
}
