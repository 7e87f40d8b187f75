package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// TestLeaderValueIsData checks where a leader's value lives on the nodes:
// on every node that holds the leadership, the election's lock key holds
// the leader's secret alone; the value is data in the leader key beside it,
// stored on at least a quorum (the nodes that granted the winning attempt),
// and every leader key holds it under the digest. The leader key lives as
// long as the leadership — extended with it over several TTLs, so that
// Leader still reports it — and no longer than a TTL after the leader
// resigned.
func TestLeaderValueIsData(t *testing.T) {
	t.Parallel()
	// Extended over two TTLs on a busy machine, the leadership must not be
	// lost: a TTL of two seconds and a node timeout of a fifth of it, both
	// stretched to the pace measured on the run.
	c := newElectionCluster(t, 3)
	ttl := pacedTTL(t, c, 2*time.Second)
	m := c.manager(t)
	e, err := m.Election("data", dlm.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ld, err := e.Campaign(ctx, "10.0.0.7:8080")
	if err != nil {
		t.Fatal(err)
	}
	key := electPrefix + "election:{data}"
	holding, stored := 0, 0
	for _, s := range c.servers {
		v, err := s.Do("GET", key)
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			continue // a node whose grant did not come in time
		}
		holding++
		if secret := fmt.Sprint(v); len(secret) != 22 || strings.Contains(secret, "10.0.0.7") {
			t.Errorf("GET %s on %s = %q; want the leader's secret alone", key, s.Addr(), v)
		}
		v, err = s.Do("GET", script.LeaderKey(key))
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			continue // a node that granted after the attempt was decided
		}
		stored++
		if !strings.HasSuffix(fmt.Sprint(v), "10.0.0.7:8080") || len(fmt.Sprint(v)) != script.LeaderDigestLen+len("10.0.0.7:8080") {
			t.Errorf("GET %s on %s = %q; want a digest and the value", script.LeaderKey(key), s.Addr(), v)
		}
	}
	if holding < 2 || stored < 2 {
		t.Fatalf("%d nodes of 3 hold the leadership, %d its value; want a quorum of each", holding, stored)
	}
	// Two TTLs: a leader key that was not extended with the lock key
	// would have expired.
	time.Sleep(2 * ttl)
	select {
	case <-ld.Lost():
		t.Fatal("the leadership was lost while extended")
	default:
	}
	if got, err := e.Leader(ctx); err != nil || got != (dlm.Observation{Leader: true, Value: "10.0.0.7:8080"}) {
		t.Fatalf("Leader after %v = %+v, %v; want the leader and its value", 2*ttl, got, err)
	}
	extended := 0
	for _, s := range c.servers {
		if v, err := s.Do("EXISTS", script.LeaderKey(key)); err != nil || v != int64(1) {
			continue
		}
		extended++
		v, err := s.Do("PTTL", script.LeaderKey(key))
		if ms, ok := v.(int64); err != nil || !ok || ms <= 0 || ms > ttl.Milliseconds() {
			t.Errorf("PTTL of the leader key on %s = %v, %v; want within (0, %d] ms", s.Addr(), v, err, ttl.Milliseconds())
		}
	}
	if extended < 2 {
		t.Errorf("%d nodes of 3 hold the leader's value after %v; want a quorum", extended, 2*ttl)
	}
	if err := ld.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Leader(ctx); err != nil || got.Leader {
		t.Fatalf("Leader after Resign = %+v, %v; want none", got, err)
	}
}

// setLeaderFails is a memlock node whose SetLeader fails while fail is set,
// as a node that times out would; it counts the SetLeader calls.
type setLeaderFails struct {
	*memlock.Node
	fail  *atomic.Bool
	calls atomic.Int32
}

func (n *setLeaderFails) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if s == script.SetLeader {
		n.calls.Add(1)
		if n.fail.Load() {
			return nil, errors.New("read tcp: i/o timeout")
		}
	}
	return n.Node.Eval(ctx, s, keys, args)
}

// TestCampaignNeedsValueOnQuorum has a candidate win the election's lock
// on a quorum while two of the three nodes cannot store its value: it
// never leads (each attempt fails and is released at once, so a rival need
// not wait for the TTL; Campaign fails after its tries), and nobody reads
// it as the leader. Each attempt asks the nodes that granted it to store
// the value, and any quorum of the three includes a failing node. Once the
// nodes store values again, it leads with its value.
func TestCampaignNeedsValueOnQuorum(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	raw := []*memlock.Node{memlock.NewNode("mem-0:6379"), memlock.NewNode("mem-1:6379"), memlock.NewNode("mem-2:6379")}
	wrapped := []*setLeaderFails{{Node: raw[0], fail: &fail}, {Node: raw[1], fail: &fail}}
	m, err := dlm.New([]driver.Node{wrapped[0], wrapped[1], raw[2]}, dlm.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rival, err := dlm.New([]driver.Node{raw[0], raw[1], raw[2]}, dlm.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rival.Close()

	const tries = 3
	attempts := &attemptCounter{}
	e, err := m.Election("quorum", dlm.WithRetry(tries, dlm.FixedBackoff(time.Millisecond)), dlm.WithHook(attempts))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ld, err := e.Campaign(ctx, "unstored"); err == nil {
		ld.Resign(ctx)
		t.Fatal("Campaign won with its value stored on one node of three")
	}
	if got := attempts.n.Load(); got != tries {
		t.Errorf("%d attempts; want %d", got, tries)
	}
	if got := wrapped[0].calls.Load() + wrapped[1].calls.Load(); got < tries || got > 2*tries {
		t.Errorf("%d SetLeader calls on the failing nodes; want one or two for each of the %d attempts", got, tries)
	}
	if got, err := e.Leader(ctx); err != nil || got.Leader {
		t.Fatalf("Leader after the failed campaign = %+v, %v; want none", got, err)
	}
	// The won locks were released: a rival leads within a second, far
	// below the TTL.
	re, err := rival.Election("quorum")
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	ld, err := re.Campaign(rctx, "rival")
	rcancel()
	if err != nil {
		t.Fatalf("rival's Campaign after the failed one = %v; want the lock free", err)
	}
	if err := ld.Resign(ctx); err != nil {
		t.Fatal(err)
	}

	fail.Store(false)
	ld, err = e.Campaign(ctx, "stored")
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Resign(context.Background())
	if got, err := re.Leader(ctx); err != nil || got != (dlm.Observation{Leader: true, Value: "stored"}) {
		t.Fatalf("Leader = %+v, %v; want the leader stored", got, err)
	}
}

// TestObservePreviousReleaseLeader checks that a leader of the previous
// release, whose secret carried ':' and its value in the lock key, is read
// with its value, so that observers may be upgraded before candidates.
func TestObservePreviousReleaseLeader(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 3)
	m := c.manager(t)
	e, err := m.Election("upgrade")
	if err != nil {
		t.Fatal(err)
	}
	key := electPrefix + "election:{upgrade}"
	for _, s := range c.servers[:2] {
		if _, err := s.Do("SET", key, "AAAAAAAAAAAAAAAAAAAAAA:old-leader:80", "PX", "10000"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got, err := e.Leader(ctx); err != nil || got != (dlm.Observation{Leader: true, Value: "old-leader:80"}) {
		t.Fatalf("Leader = %+v, %v; want the previous release's leader and its value", got, err)
	}
}

// TestElectionRefusesBadInput checks the Election's edge: a name or an
// option a lock refuses, nil contexts, and a closed manager.
func TestElectionRefusesBadInput(t *testing.T) {
	t.Parallel()
	m, err := memlock.New()
	if err != nil {
		t.Fatal(err)
	}
	e, err := m.Election("e")
	if err != nil {
		t.Fatal(err)
	}
	var nilCtx context.Context
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"empty name", func() error { _, err := m.Election(""); return err }(), dlm.ErrInvalid},
		{"bad TTL", func() error { _, err := m.Election("e", dlm.WithTTL(0)); return err }(), dlm.ErrInvalid},
		{"campaign nil context", func() error { _, err := e.Campaign(nilCtx, "v"); return err }(), dlm.ErrInvalid},
		{"observe nil context", func() error { _, err := e.Observe(nilCtx); return err }(), dlm.ErrInvalid},
		{"leader nil context", func() error { _, err := e.Leader(nilCtx); return err }(), dlm.ErrInvalid},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v; want %v", tc.name, tc.err, tc.want)
		}
	}
	m.Close()
	if _, err := m.Election("e"); !errors.Is(err, dlm.ErrClosed) {
		t.Errorf("Election after Close: err = %v; want ErrClosed", err)
	}
	if _, err := e.Leader(context.Background()); !errors.Is(err, dlm.ErrClosed) {
		t.Errorf("Leader after Close: err = %v; want ErrClosed", err)
	}
	if _, err := e.Observe(context.Background()); !errors.Is(err, dlm.ErrClosed) {
		t.Errorf("Observe after Close: err = %v; want ErrClosed", err)
	}
}

// TestCampaignFairOrder checks that candidates that campaign with
// WithFairness lead in the order they began to wait, across managers (as
// "redlock elect --fair" asks): B asks before C, so when the leader A
// resigns, B leads, and C only after B resigns.
func TestCampaignFairOrder(t *testing.T) {
	t.Parallel()
	nodes := []*memlock.Node{memlock.NewNode("mem-0:6379"), memlock.NewNode("mem-1:6379"), memlock.NewNode("mem-2:6379")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type candidate struct {
		e        *dlm.Election
		attempts *attemptCounter
		won      chan *dlm.Leadership
	}
	open := func(name string) *candidate {
		m, err := dlm.New([]driver.Node{nodes[0], nodes[1], nodes[2]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		c := &candidate{attempts: &attemptCounter{}, won: make(chan *dlm.Leadership, 1)}
		if c.e, err = m.Election("fair", dlm.WithFairness(dlm.Fairness{}), dlm.WithHook(c.attempts)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	campaign := func(c *candidate, value string) {
		go func() {
			ld, err := c.e.Campaign(ctx, value)
			if err != nil {
				t.Errorf("Campaign(%s) = %v", value, err)
			}
			c.won <- ld
		}()
	}
	waitAttempt := func(c *candidate, what string) {
		for c.attempts.n.Load() == 0 {
			if ctx.Err() != nil {
				t.Fatalf("%s made no attempt", what)
			}
			time.Sleep(time.Millisecond) // polling a condition, not a timing assertion
		}
	}
	a, b, c := open("a"), open("b"), open("c")
	campaign(a, "a")
	leaderA := <-a.won
	campaign(b, "b")
	waitAttempt(b, "b") // refused: b has its place in the line
	campaign(c, "c")
	waitAttempt(c, "c")
	if err := leaderA.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	var leaderB *dlm.Leadership
	select {
	case leaderB = <-b.won:
	case ld := <-c.won:
		ld.Resign(ctx)
		t.Fatal("c led before b, which began to wait first")
	case <-ctx.Done():
		t.Fatal("nobody led after a resigned")
	}
	if got, err := b.e.Leader(ctx); err != nil || got != (dlm.Observation{Leader: true, Value: "b"}) {
		t.Errorf("Leader after a resigned = %+v, %v; want b", got, err)
	}
	if err := leaderB.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case ld := <-c.won:
		ld.Resign(ctx)
	case <-ctx.Done():
		t.Fatal("c did not lead after b resigned")
	}
}

// TestCampaignStoresValueOnEveryGrant has a candidate lead ten elections on
// three nodes: every node that holds a leader's grant holds its value
// beside it, not only the first quorum to grant, so with one node down,
// here the first, Leader still finds the value on a quorum of the nodes and
// reports it. Observers report a value only where a quorum holds it (see
// TestLeaderValueNeedsQuorum): a value stored on the first quorum alone
// would be lost to observers with any of those nodes down.
func TestCampaignStoresValueOnEveryGrant(t *testing.T) {
	t.Parallel()
	c := newElectionCluster(t, 3)
	m := c.manager(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var elections []*dlm.Election
	for i := range 10 {
		name := fmt.Sprintf("every-%d", i)
		e, err := m.Election(name)
		if err != nil {
			t.Fatal(err)
		}
		ld, err := e.Campaign(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		defer ld.Resign(context.Background())
		key := electPrefix + "election:{" + name + "}"
		for _, s := range c.servers {
			held, err := s.Do("EXISTS", key)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := s.Do("EXISTS", script.LeaderKey(key))
			if err != nil {
				t.Fatal(err)
			}
			if held != stored {
				t.Errorf("%s on %s: EXISTS of the lock key %v, of the leader key %v; want the value beside every grant", name, s.Addr(), held, stored)
			}
		}
		elections = append(elections, e)
	}
	c.servers[0].Kill()
	for _, e := range elections {
		want := dlm.Observation{Leader: true, Value: e.Name()}
		if got, err := e.Leader(ctx); err != nil || got != want {
			t.Errorf("Leader of %s with one node of three down = %+v, %v; want %+v", e.Name(), got, err, want)
		}
	}
}
