package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/leakcheck"
	"github.com/dlmgo/redlock/internal/resp"
)

const electPrefix = "elect:"

// electionCluster is n redis-servers and a way to open managers over them,
// each with nodes of its own, as separate processes would have.
type electionCluster struct {
	servers []*redistest.Server
	opts    []dlm.ManagerOption
}

// newElectionCluster starts n redis-servers for managers with opts, whose
// node timeout is 500ms stretched to the pace measured on the run
// ([pacedNodeTimeout]) unless opts set one.
func newElectionCluster(t *testing.T, n int, opts ...dlm.ManagerOption) *electionCluster {
	t.Helper()
	srvs := redistest.StartServers(t, n)
	return &electionCluster{
		servers: srvs,
		opts:    append([]dlm.ManagerOption{dlm.WithKeyPrefix(electPrefix), dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], 500*time.Millisecond))}, opts...),
	}
}

// pacedTTL sets the TTL of c's managers to ttl stretched to the pace
// measured through c's first server ([redistest.Pace.Stretch]), and their
// node timeout to a fifth of it, and returns that TTL.
func pacedTTL(t *testing.T, c *electionCluster, ttl time.Duration) time.Duration {
	t.Helper()
	p := redistest.MeasurePace(t, c.servers[0])
	ttl = p.Stretch(ttl)
	c.opts = append(c.opts, dlm.WithTTL(ttl), dlm.WithNodeTimeout(ttl/5))
	t.Logf("pace %v: TTL %v, node timeout %v", p, ttl, ttl/5)
	return ttl
}

// manager opens a manager over the cluster; the test closes it.
func (c *electionCluster) manager(t *testing.T) *dlm.Manager {
	t.Helper()
	var nodes []driver.Node
	for _, s := range c.servers {
		cfg, err := driver.ParseURL("redis://" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n := resp.NewNode(cfg)
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	m, err := dlm.New(nodes, c.opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestCampaignOneLeaderAtATime has candidates on three managers campaign
// for one election over and over: no two lead at once, and each resign
// lets another lead.
func TestCampaignOneLeaderAtATime(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 3, dlm.WithTTL(2*time.Second))
	var (
		leaders atomic.Int32
		terms   sync.Map
		wins    atomic.Int32
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 3 {
		m := c.manager(t)
		for j := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					ld, err := campaign(ctx, m, "one", fmt.Sprintf("cand-%d-%d", i, j))
					if err != nil {
						t.Errorf("Campaign = %v", err)
						return
					}
					if n := leaders.Add(1); n != 1 {
						t.Errorf("%d leaders at once", n)
					}
					if _, dup := terms.LoadOrStore(ld.Term(), true); dup {
						t.Errorf("term %d given twice", ld.Term())
					}
					wins.Add(1)
					time.Sleep(5 * time.Millisecond)
					leaders.Add(-1)
					if err := ld.Resign(ctx); err != nil {
						t.Errorf("Resign = %v", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	if got := wins.Load(); got != 18 {
		t.Errorf("%d leaderships; want 18", got)
	}
}

// TestLeadershipOutlivesCampaignContext cancels Campaign's context once it
// has returned: the leadership is extended all the same, for many TTLs, and
// a rival cannot win it; Resign then hands it over.
func TestLeadershipOutlivesCampaignContext(t *testing.T) {
	// Extensions come every two thirds of the TTL: a TTL of a second,
	// stretched to the pace measured on the run, leaves a loaded machine
	// time to make them; the node timeout is a fifth of it.
	c := newElectionCluster(t, 3)
	ttl := pacedTTL(t, c, time.Second)
	snap := leakcheck.Take()
	m, rival := c.manager(t), c.manager(t)
	ctx, cancel := context.WithCancel(context.Background())
	ld, err := campaign(ctx, m, "outlive", "first")
	if err != nil {
		t.Fatalf("Campaign = %v", err)
	}
	cancel()
	rctx, rcancel := context.WithTimeout(context.Background(), 4*ttl)
	defer rcancel()
	if _, err := campaign(rctx, rival, "outlive", "second"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("rival Campaign while the first leads = %v; want DeadlineExceeded", err)
	}
	select {
	case <-ld.Lost():
		t.Fatalf("leadership lost %v after Campaign's context ended", 4*ttl)
	default:
	}
	if err := ld.Resign(context.Background()); err != nil {
		t.Fatalf("Resign = %v", err)
	}
	select {
	case <-ld.Lost():
	default:
		t.Error("Lost still open after Resign")
	}
	if err := ld.Resign(context.Background()); !errors.Is(err, dlm.ErrNotHeld) || errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("second Resign = %v; want ErrNotHeld, not ErrLockLost", err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	next, err := campaign(wctx, rival, "outlive", "second")
	if err != nil {
		t.Fatalf("rival Campaign after Resign = %v", err)
	}
	if next.Term() <= ld.Term() {
		t.Errorf("term %d after term %d; want greater", next.Term(), ld.Term())
	}
	if err := next.Resign(context.Background()); err != nil {
		t.Errorf("Resign = %v", err)
	}
	m.Close()
	rival.Close()
	snap.Check(t, 5*time.Second)
}

// TestCampaignContextEndsWait checks that Campaign stops waiting when its
// context ends, with the context's error.
func TestCampaignContextEndsWait(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 1)
	m := c.manager(t)
	ld, err := campaign(context.Background(), m, "wait", "a")
	if err != nil {
		t.Fatalf("Campaign = %v", err)
	}
	defer ld.Resign(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = campaign(ctx, c.manager(t), "wait", "b")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Campaign while another leads = %v; want DeadlineExceeded", err)
	}
}

// TestLeadershipEndsWithManager closes the leader's manager without
// resigning: Lost is closed within the TTL, the leader's goroutines end,
// and a rival leads once the keys expire.
func TestLeadershipEndsWithManager(t *testing.T) {
	c := newElectionCluster(t, 3)
	ttl := pacedTTL(t, c, 500*time.Millisecond)
	p := redistest.MeasurePace(t, c.servers[0])
	rival := c.manager(t)
	snap := leakcheck.Take()
	m := c.manager(t)
	ld, err := campaign(context.Background(), m, "close", "a")
	if err != nil {
		t.Fatalf("Campaign = %v", err)
	}
	m.Close()
	select {
	case <-ld.Lost():
	case <-time.After(ttl + p.Stretch(2*time.Second)): // the TTL, and a loaded machine
		t.Fatalf("Lost still open %v after Manager.Close (pace %v)", ttl+p.Stretch(2*time.Second), p)
	}
	snap.Check(t, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, err := campaign(ctx, rival, "close", "b")
	if err != nil {
		t.Fatalf("rival Campaign = %v", err)
	}
	next.Resign(ctx)
}

// TestObserve follows an election through its states: none, a leader, none
// after Resign, a new leader, and none again when that leader's manager
// closes without resigning (its keys expire).
func TestObserve(t *testing.T) {
	c := newElectionCluster(t, 3)
	ttl := pacedTTL(t, c, time.Second)
	p := redistest.MeasurePace(t, c.servers[0])
	observer, a, b := c.manager(t), c.manager(t), c.manager(t)
	snap := leakcheck.Take()
	ctx, cancel := context.WithCancel(context.Background())
	obs, err := observe(ctx, observer, "watched")
	if err != nil {
		t.Fatalf("Observe = %v", err)
	}
	expect := func(want dlm.Observation, within time.Duration) {
		t.Helper()
		select {
		case got, ok := <-obs:
			if !ok || got != want {
				t.Fatalf("observed %+v (open %v); want %+v", got, ok, want)
			}
		case <-time.After(within):
			t.Fatalf("nothing observed in %v; want %+v", within, want)
		}
	}
	// Changes are announced, each heard at once: TestObserveOnClock proves
	// it on the fake clock. Here each is heard at all, in order, within a
	// bound stretched to the pace that only keeps a lost one from hanging
	// the test.
	prompt := p.Stretch(dlm.ObservePoll * 3 / 4)
	expect(dlm.Observation{}, prompt)
	la, err := campaign(ctx, a, "watched", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	expect(dlm.Observation{Leader: true, Value: "alpha"}, prompt)
	// Extensions are not changes.
	select {
	case got := <-obs:
		t.Fatalf("observed %+v while alpha kept leading", got)
	case <-time.After(2 * ttl):
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	expect(dlm.Observation{}, prompt)
	if _, err := campaign(ctx, b, "watched", "beta"); err != nil {
		t.Fatal(err)
	}
	expect(dlm.Observation{Leader: true, Value: "beta"}, prompt)
	// beta stops extending: its keys expire within the TTL, and the
	// observer reads them then (with room for a loaded machine).
	b.Close()
	expect(dlm.Observation{}, ttl+p.Stretch(2*time.Second))
	cancel()
	select {
	case got, ok := <-obs:
		if ok {
			t.Fatalf("observed %+v after the context ended; want the channel closed", got)
		}
	case <-time.After(p.Stretch(5 * time.Second)):
		t.Fatalf("Observe's channel still open %v after its context ended (pace %v)", p.Stretch(5*time.Second), p)
	}
	observer.Close() // its subscriptions linger for later waiters until then
	a.Close()
	snap.Check(t, 5*time.Second)
}

// TestObserveSameValueNewLeader checks that a new leader is reported even
// when its value is the one of the leader before it.
func TestObserveSameValueNewLeader(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 1)
	m := c.manager(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ld, err := campaign(ctx, m, "same", "v")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := observe(ctx, m, "same")
	if err != nil {
		t.Fatal(err)
	}
	if got := <-obs; got != (dlm.Observation{Leader: true, Value: "v"}) {
		t.Fatalf("observed %+v; want leader v", got)
	}
	ld.Resign(ctx)
	if _, err := campaign(ctx, m, "same", "v"); err != nil {
		t.Fatal(err)
	}
	// The reader fell behind: it gets the latest state. The bound only
	// keeps a lost state from hanging the test.
	deadline := time.After(redistest.MeasurePace(t, c.servers[0]).Stretch(5 * time.Second))
	for {
		select {
		case got := <-obs:
			if got == (dlm.Observation{Leader: true, Value: "v"}) {
				return
			}
		case <-deadline:
			t.Fatal("the second leader with the same value was not observed")
		}
	}
}

// TestCampaignSameManagerNoHandOver has two candidates on one manager, the
// second waiting in the manager's line when the first resigns at once: the
// second leads under its own value and a greater term. A lock handed over
// from caller to caller in the manager keeps its secret, which here carries
// the value: observers would go on seeing the first leader's.
func TestCampaignSameManagerNoHandOver(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 3)
	m, observer := c.manager(t), c.manager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for round := range 10 {
		first, err := campaign(ctx, m, "handover", fmt.Sprint("first-", round))
		if err != nil {
			t.Fatal(err)
		}
		second := make(chan *dlm.Leadership, 1)
		go func() {
			ld, err := campaign(ctx, m, "handover", fmt.Sprint("second-", round))
			if err != nil {
				t.Errorf("second Campaign = %v", err)
			}
			second <- ld
		}()
		time.Sleep(2 * time.Millisecond) // the second candidate lines up
		if err := first.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		ld := <-second
		if ld == nil {
			return
		}
		if ld.Term() <= first.Term() {
			t.Errorf("round %d: second term %d after first %d; want greater", round, ld.Term(), first.Term())
		}
		octx, ocancel := context.WithCancel(ctx)
		obs, err := observe(octx, observer, "handover")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := <-obs, (dlm.Observation{Leader: true, Value: fmt.Sprint("second-", round)}); got != want {
			t.Errorf("round %d: observed %+v; want %+v", round, got, want)
		}
		ocancel()
		if err := ld.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestObserveCloseEnds checks that Manager.Close closes Observe's channel.
func TestObserveCloseEnds(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 1)
	m := c.manager(t)
	obs, err := observe(context.Background(), m, "closing")
	if err != nil {
		t.Fatal(err)
	}
	<-obs
	bound := redistest.MeasurePace(t, c.servers[0]).Stretch(5 * time.Second) // only keeps the test from hanging
	m.Close()
	select {
	case _, ok := <-obs:
		if ok {
			t.Fatal("observed a state after Close")
		}
	case <-time.After(bound):
		t.Fatalf("Observe's channel still open %v after Manager.Close", bound)
	}
}

// TestElectionBadInput checks the refusals at the API edge.
func TestElectionBadInput(t *testing.T) {
	t.Parallel()
	m, err := dlm.New([]driver.Node{downNode("down:1")})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	var nilCtx context.Context // a variable: vet flags a literal nil Context
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"empty name", func() error { _, err := campaign(ctx, m, "", "v"); return err }()},
		{"long value", func() error {
			_, err := campaign(ctx, m, "e", strings.Repeat("x", dlm.MaxLeaderValueLen+1))
			return err
		}()},
		{"nil context", func() error { _, err := campaign(nilCtx, m, "e", "v"); return err }()},
		{"bad TTL", func() error { _, err := campaign(ctx, m, "e", "v", dlm.WithTTL(0)); return err }()},
		{"observe empty name", func() error { _, err := observe(ctx, m, ""); return err }()},
		{"observe nil context", func() error { _, err := observe(nilCtx, m, "e"); return err }()},
	} {
		if !errors.Is(tc.err, dlm.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", tc.name, tc.err)
		}
	}
}

// plainNode hides a node's optional interfaces: no pub/sub.
type plainNode struct{ driver.Node }

// TestObservePollsWithoutPubSub observes through nodes that cannot
// subscribe: changes are still reported, by polling, within ObservePoll.
func TestObservePollsWithoutPubSub(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 3)
	var nodes []driver.Node
	for _, s := range c.servers {
		cfg, err := driver.ParseURL("redis://" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n := resp.NewNode(cfg)
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, plainNode{n})
	}
	observer, err := dlm.New(nodes, c.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	candidate := c.manager(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs, err := observe(ctx, observer, "polled")
	if err != nil {
		t.Fatal(err)
	}
	if got := <-obs; got.Leader {
		t.Fatalf("observed %+v; want no leader", got)
	}
	ld, err := campaign(ctx, candidate, "polled", "v")
	if err != nil {
		t.Fatal(err)
	}
	won := time.Now()
	// A poll, and a loaded machine: TestObserveOnClock proves on the fake
	// clock that a change no one announces (an expiry) is read at the next
	// poll.
	within := dlm.ObservePoll + redistest.MeasurePace(t, c.servers[0]).Stretch(2*time.Second)
	select {
	case got := <-obs:
		if got != (dlm.Observation{Leader: true, Value: "v"}) {
			t.Fatalf("observed %+v; want leader v", got)
		}
		t.Logf("leader observed by polling %v after it won", time.Since(won).Round(time.Millisecond))
	case <-time.After(within):
		t.Fatalf("leader not observed within %v without pub/sub", within)
	}
	ld.Resign(ctx)
	select {
	case got := <-obs:
		if got.Leader {
			t.Fatalf("observed %+v after Resign; want no leader", got)
		}
	case <-time.After(within):
		t.Fatalf("resignation not observed within %v without pub/sub", within)
	}
}

// TestObserveNodesDown observes while a minority of the nodes is down, then
// a majority: the leader is reported with one node of three down, and with
// two down the last state stands rather than a guess.
func TestObserveNodesDown(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 3)
	// Node timeouts stretched to the pace: a node up is never taken for
	// one down.
	c.opts = append(c.opts, dlm.WithNodeTimeout(pacedNodeTimeout(t, c.servers[0], 200*time.Millisecond)))
	observer, candidate := c.manager(t), c.manager(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ld, err := campaign(ctx, candidate, "down", "v")
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Resign(context.Background())
	p := redistest.MeasurePace(t, c.servers[0]) // the bound below only keeps the test from hanging
	c.servers[2].Kill()
	obs, err := observe(ctx, observer, "down")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-obs:
		if got != (dlm.Observation{Leader: true, Value: "v"}) {
			t.Fatalf("observed %+v with one node of three down; want leader v", got)
		}
	case <-time.After(p.Stretch(5 * time.Second)):
		t.Fatalf("nothing observed in %v with one node of three down (pace %v)", p.Stretch(5*time.Second), p)
	}
	c.servers[1].Kill()
	select {
	case got, ok := <-obs:
		t.Fatalf("observed %+v (open %v) with two nodes of three down; want nothing", got, ok)
	case <-time.After(2 * dlm.ObservePoll):
	}
}

// campaign campaigns in m's election name with value.
func campaign(ctx context.Context, m *dlm.Manager, name, value string, opts ...dlm.Option) (*dlm.Leadership, error) {
	e, err := m.Election(name, opts...)
	if err != nil {
		return nil, err
	}
	return e.Campaign(ctx, value)
}

// observe observes m's election name.
func observe(ctx context.Context, m *dlm.Manager, name string, opts ...dlm.Option) (<-chan dlm.Observation, error) {
	e, err := m.Election(name, opts...)
	if err != nil {
		return nil, err
	}
	return e.Observe(ctx)
}
