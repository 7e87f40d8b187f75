package dlm_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// leaderReadsNode is a node that measures the replies to the reads of an
// election's state (script.Leader).
type leaderReadsNode struct {
	*resp.Node
	reads   atomic.Int64 // Leader scripts sent
	replied atomic.Int64 // … and answered
	largest atomic.Int64 // the largest reply's size, in bytes of its strings
}

func (n *leaderReadsNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	v, err := n.Node.Eval(ctx, s, keys, args)
	if s != script.Leader {
		return v, err
	}
	n.reads.Add(1)
	if err == nil {
		n.replied.Add(1)
		size := replySize(v)
		for old := n.largest.Load(); size > old && !n.largest.CompareAndSwap(old, size); old = n.largest.Load() {
		}
	}
	return v, err
}

// replySize is the size of a script's reply: the bytes of its strings, 8
// for each integer.
func replySize(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v))
	case []any:
		var n int64
		for _, e := range v {
			n += replySize(e)
		}
		return n
	}
	return 8
}

// netOutput returns how many bytes s has sent to its clients.
func netOutput(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	v, err := s.Do("INFO", "stats")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := v.(string)
	for _, line := range strings.Split(info, "\r\n") {
		if f, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("INFO stats on %s: %q: %v", s.Addr(), line, err)
			}
			return n
		}
	}
	t.Fatalf("INFO stats on %s has no total_net_output_bytes", s.Addr())
	return 0
}

// TestObserveOversizedLeaderValue stores a value of 8 MiB under an
// election's lock key on one node of five, and another under the leader
// key beside the leader's lock on a second node, as any client that may
// write under the key prefix can, and sends the observer forged wake
// messages, each another read of the nodes: neither value is transferred, each read's
// reply on that node stays within a bound derived from MaxLeaderValueLen,
// the observer counts the answer as invalid, and it reports the real leader,
// whose grant and value the other three hold, a quorum, before and after,
// and the next one. Candidates and observer run as the least-privilege ACL
// user.
func TestObserveOversizedLeaderValue(t *testing.T) {
	t.Parallel()
	const (
		name      = "oversized"
		oversized = 8 << 20
		forged    = 20
		timeout   = 500 * time.Millisecond
		// A read's reply: a leader's value, its digest, a PTTL and the
		// framing, or the length of an oversized value.
		perRead = dlm.MaxLeaderValueLen + 1024
	)
	line := "user locker on >pw-locker " + strings.Join(dlmtest.LeastPrivilegeRules(dlm.DefaultKeyPrefix), " ")
	srvs := redistest.StartServers(t, 5, redistest.WithACLFile(t, line))
	open := func(wrap func(*resp.Node) driver.Node) *dlm.Manager {
		var nodes []driver.Node
		for _, s := range srvs {
			cfg, err := driver.ParseURL("redis://locker:pw-locker@" + s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			n := resp.NewNode(cfg)
			t.Cleanup(func() { n.Close() })
			nodes = append(nodes, wrap(n))
		}
		m, err := dlm.New(nodes, dlm.WithNodeTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	plain := func(n *resp.Node) driver.Node { return n }
	// The observer's reads of the first two nodes are measured: the one
	// with the oversized lock key, and the leader's with the oversized
	// leader key.
	var measured, measuredLeader *leaderReadsNode
	observer := open(func(n *resp.Node) driver.Node {
		switch {
		case measured == nil:
			measured = &leaderReadsNode{Node: n}
			return measured
		case measuredLeader == nil:
			measuredLeader = &leaderReadsNode{Node: n}
			return measuredLeader
		}
		return n
	})
	candidate := open(plain)
	hostile := srvs[0] // the node measured above

	key := dlm.DefaultKeyPrefix + "election:{" + name + "}"
	// A secret's place, ':' and a value: all of it would be the leader's
	// value, and the reply.
	if _, err := hostile.Do("SET", key, "forged:"+strings.Repeat("x", oversized)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ld, err := campaign(ctx, candidate, name, "real")
	if err != nil {
		t.Fatalf("Campaign with the key taken on one node of five = %v", err)
	}
	// The oversized value is under the very key the election uses, and
	// the leader's value is data beside it, not in its secret.
	leaderKey := key + ":leader"
	if v, err := srvs[1].Do("GET", key); err != nil || strings.Contains(fmt.Sprint(v), "real") {
		t.Fatalf("GET %s on the leader's node = %v, %v; want its secret alone", key, v, err)
	}
	for _, s := range srvs[2:] {
		if v, err := s.Do("GET", leaderKey); err != nil || !strings.HasSuffix(fmt.Sprint(v), "real") {
			t.Fatalf("GET %s on the leader's node %s = %v, %v; want a digest and \"real\"", leaderKey, s.Addr(), v, err)
		}
	}
	if _, err := srvs[1].Do("SET", leaderKey, strings.Repeat("y", oversized), "PX", "60000"); err != nil {
		t.Fatal(err)
	}

	election, err := observer.Election(name)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := election.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A read takes a node timeout at most; a change is read at once, and
	// without pub/sub within ObservePoll.
	within := dlm.ObservePoll + 10*timeout
	expect := func(want dlm.Observation) {
		t.Helper()
		select {
		case got := <-obs:
			if got != want {
				t.Fatalf("observed %+v; want %+v", got, want)
			}
		case <-time.After(within):
			t.Fatalf("nothing observed in %v; want %+v", within, want)
		}
	}
	expect(dlm.Observation{Leader: true, Value: "real"})

	// Each forged release makes the observer read the nodes again (or its
	// poll does, if the message is lost): one at a time, so that none
	// merges into another.
	sentBefore, readsBefore := netOutput(t, hostile), measured.reads.Load()
	channel := script.WakeChannel(key)
	for i := range forged {
		replied := measured.replied.Load()
		if _, err := hostile.Do("PUBLISH", channel, "r1"); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(within); measured.replied.Load() == replied; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("forged wake %d: the observer did not read the nodes within %v", i+1, within)
			}
		}
	}
	reads := measured.reads.Load() - readsBefore
	sent := netOutput(t, hostile) - sentBefore
	t.Logf("%d reads of the election cost the node holding %d bytes %d bytes of output; largest reply %d bytes",
		reads, oversized, sent, measured.largest.Load())
	for _, n := range []*leaderReadsNode{measured, measuredLeader} {
		if largest := n.largest.Load(); largest > perRead {
			t.Errorf("largest reply of %s to a read of the election = %d bytes; want at most %d (MaxLeaderValueLen and framing)", n.Addr(), largest, perRead)
		}
	}
	// The node's other output in the meantime: the candidate's extensions,
	// the wake messages and INFO's replies, a few kB.
	if limit := reads*perRead + 64<<10; sent > limit {
		t.Errorf("%d reads made the node send %d bytes; want at most %d: a read must not transfer the value", reads, sent, limit)
	}
	if got := dlm.LeadersIgnored(election); got < 2*uint64(forged) {
		t.Errorf("observer ignored %d answers as invalid; want at least %d, two per read", got, 2*forged)
	}

	// The reads changed nothing, and the observer follows the election.
	select {
	case got := <-obs:
		t.Fatalf("observed %+v while the leader kept leading", got)
	default:
	}
	if err := ld.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	expect(dlm.Observation{})
	next, err := campaign(ctx, candidate, name, "next")
	if err != nil {
		t.Fatal(err)
	}
	defer next.Resign(context.Background())
	expect(dlm.Observation{Leader: true, Value: "next"})
}

// electionManager opens a manager over the first n servers of c; the test
// closes it.
func (c *electionCluster) electionManager(t *testing.T, n int) *dlm.Manager {
	t.Helper()
	var nodes []driver.Node
	for _, s := range c.servers[:n] {
		cfg, err := driver.ParseURL("redis://" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		node := resp.NewNode(cfg)
		t.Cleanup(func() { node.Close() })
		nodes = append(nodes, node)
	}
	m, err := dlm.New(nodes, c.opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestLeaderValueNeedsQuorum has a candidate lead an election on three
// nodes, and on five, and then gives its leader key on each node a value of
// the test's choosing, under the digest of the leader's secret, as a hostile
// node (or anyone who may write under the prefix there) can: the digest is
// what every observer reads. Leader and Observe report the leader's value
// only where a quorum of the nodes hold it; one node, or two of five, with
// another value never make it theirs, and a leadership whose value no
// quorum holds alike reads as no leader, never as one node's word.
func TestLeaderValueNeedsQuorum(t *testing.T) {
	t.Parallel()
	const (
		value  = "10.0.0.7:8080"
		forged = "evil.example:6666"
		other  = "other.example:7777"
		none   = "" // the node holds the grant, and no value beside it
	)
	c := newElectionCluster(t, 5)
	p := redistest.MeasurePace(t, c.servers[0])
	managers := map[int]*dlm.Manager{3: c.electionManager(t, 3), 5: c.electionManager(t, 5)}
	leader := dlm.Observation{Leader: true, Value: value}
	for i, tc := range []struct {
		name   string
		values []string // each node's leader key: value, forged, other, or none
		want   dlm.Observation
	}{
		{"quorum holds the value, last node forged", []string{value, value, forged}, leader},
		{"quorum holds the value, first node forged", []string{forged, value, value}, leader},
		{"five nodes, quorum holds the value", []string{value, forged, value, none, value}, leader},
		{"no quorum, one value forged and one missing", []string{value, none, forged}, dlm.Observation{}},
		{"no quorum, three values", []string{value, other, forged}, dlm.Observation{}},
		{"five nodes, no quorum, two forged alike", []string{value, value, forged, forged, none}, dlm.Observation{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			name := fmt.Sprintf("forged-%d", i)
			e, err := managers[len(tc.values)].Election(name)
			if err != nil {
				t.Fatal(err)
			}
			ld, err := e.Campaign(ctx, value)
			if err != nil {
				t.Fatal(err)
			}
			defer ld.Resign(context.Background())
			key := electPrefix + "election:{" + name + "}"
			srvs := c.servers[:len(tc.values)]
			var secret string
			for _, s := range srvs {
				if v, err := s.Do("GET", key); err == nil && v != nil {
					secret = fmt.Sprint(v)
					break
				}
			}
			if secret == "" {
				t.Fatalf("no node holds %s", key)
			}
			// Every node holds the grant (one whose grant came late would
			// hold none), and the leader key the case gives it, beside the
			// digest of the secret.
			digest := fmt.Sprintf("%x", sha1.Sum([]byte(secret)))
			for j, s := range srvs {
				if _, err := s.Do("SET", key, secret, "PX", "60000"); err != nil {
					t.Fatal(err)
				}
				lk := script.LeaderKey(key)
				if tc.values[j] == none {
					_, err = s.Do("DEL", lk)
				} else {
					_, err = s.Do("SET", lk, digest+tc.values[j], "PX", "60000")
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if got, err := e.Leader(ctx); err != nil || got != tc.want {
				t.Errorf("Leader = %+v, %v; want %+v", got, err, tc.want)
			}
			octx, ocancel := context.WithCancel(ctx)
			defer ocancel()
			obs, err := e.Observe(octx)
			if err != nil {
				t.Fatal(err)
			}
			within := p.Stretch(5 * time.Second)
			select {
			case got := <-obs:
				if got != tc.want {
					t.Errorf("Observe's first state = %+v; want %+v", got, tc.want)
				}
			case <-time.After(within):
				t.Fatalf("nothing observed in %v; want %+v", within, tc.want)
			}
		})
	}
}

// TestObserveForgedGrantFlood floods an election's broadcast channel on one
// node of three with forged grants ("t", which any client allowed to
// publish there can send) for a second, while four observers follow a
// leader that keeps leading: the reads the messages start are paced, so
// that the observers read the nodes at most a burst of reads and then one
// per node timeout each, beyond their own pace (docs/security.md); nothing
// is reported meanwhile, and a real change after the flood is.
func TestObserveForgedGrantFlood(t *testing.T) {
	t.Parallel()
	const (
		name      = "flooded"
		observers = 4
		flood     = time.Second
	)
	c := newElectionCluster(t, 3)
	nodeTimeout := pacedNodeTimeout(t, c.servers[0], 250*time.Millisecond)
	c.opts = append(c.opts, dlm.WithNodeTimeout(nodeTimeout))
	p := redistest.MeasurePace(t, c.servers[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ld, err := campaign(ctx, c.manager(t), name, "real")
	if err != nil {
		t.Fatal(err)
	}
	// The observers' reads, counted on the first node: each read asks every
	// node once.
	var nodes []driver.Node
	var counted *leaderReadsNode
	for _, s := range c.servers {
		cfg, err := driver.ParseURL("redis://" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n := resp.NewNode(cfg)
		t.Cleanup(func() { n.Close() })
		if counted == nil {
			counted = &leaderReadsNode{Node: n}
			nodes = append(nodes, counted)
			continue
		}
		nodes = append(nodes, n)
	}
	m, err := dlm.New(nodes, c.opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := m.Election(name)
	if err != nil {
		t.Fatal(err)
	}
	within := p.Stretch(5 * time.Second)
	expect := func(obs <-chan dlm.Observation, want dlm.Observation) {
		t.Helper()
		select {
		case got := <-obs:
			if got != want {
				t.Fatalf("observed %+v; want %+v", got, want)
			}
		case <-time.After(within):
			t.Fatalf("nothing observed in %v; want %+v", within, want)
		}
	}
	var chans []<-chan dlm.Observation
	for range observers {
		obs, err := e.Observe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		expect(obs, dlm.Observation{Leader: true, Value: "real"})
		chans = append(chans, obs)
	}
	conn, err := resp.Dial(ctx, &driver.Config{Addr: c.servers[0].Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	channel := script.WakeChannel(electPrefix + "election:{" + name + "}")

	before, start, sent := counted.reads.Load(), time.Now(), 0
	for time.Since(start) < flood {
		if _, err := conn.Do(ctx, "PUBLISH", channel, script.WakeGrant); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	// A read the flood asked for may come up to a node timeout after its
	// last message.
	time.Sleep(nodeTimeout)
	span := time.Since(start)
	reads := counted.reads.Load() - before
	// Each observer: the burst, one read per node timeout, its own reads
	// (every ObservePoll while a leader's keys are far from expiry), and
	// one under way when the flood began, for each of which a span
	// begun part-way rounds up.
	each := int64(dlm.ObserveBurst(len(c.servers))) + int64(span/nodeTimeout) + 1 + int64(span/dlm.ObservePoll) + 1 + 1
	t.Logf("%d forged grants in %v: %d reads of the election by %d observers (%d script calls on %d nodes), node timeout %v; bound %d",
		sent, span, reads, observers, reads*int64(len(c.servers)), len(c.servers), nodeTimeout, observers*each)
	if reads > observers*each {
		t.Errorf("%d forged grants in %v made %d observers read the election %d times; want at most %d (%d each)",
			sent, span, observers, reads, observers*each, each)
	}
	for i, obs := range chans {
		select {
		case got := <-obs:
			t.Fatalf("observer %d observed %+v while the leader kept leading", i, got)
		default:
		}
	}
	if err := ld.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	for _, obs := range chans {
		expect(obs, dlm.Observation{})
	}
}
