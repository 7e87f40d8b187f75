package dlm

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// vote counts the nodes' answers to one script.
type vote struct {
	yes, no, failed int
	errs            []error // by node index; nil when no node failed
	fences          []int64 // by node index, for a fenced acquire: the counter a yes carried
	// granted has bit i set when node i said yes (for nodes 0 to 63; a
	// manager of more nodes treats every node as possibly granted).
	granted uint64
	ticket  int64 // the largest ticket a fair acquire's replies carried
	// cut is set when the caller's context ended before the outcome was
	// known: the nodes still due were counted as failed with its error, so
	// the vote says nothing of the lock or the nodes.
	cut bool
}

// saidNo reports whether node i answered and refused, which for an acquire
// means it wrote nothing.
func (v *vote) saidNo(i int, answered bool) bool {
	return answered && i < 64 && v.granted&(1<<i) == 0 && (v.errs == nil || v.errs[i] == nil)
}

// request is one script run sent to the nodes.
type request struct {
	op      string
	script  *driver.Script
	keys    []string
	args    []string
	want    int64 // the reply that counts as yes; any other integer is no
	timeout time.Duration
	// early stops waiting once the outcome is known: a quorum of yes, or
	// too few nodes left to reach one. The replies still due are handed
	// back as a pending; their requests end by their own deadline.
	early bool
	// only, when set, limits the request to the nodes marked true.
	only []bool
	// fenced makes any positive reply a yes that carries the node's
	// fencing counter, recorded in vote.fences.
	fenced bool
	// fair expects the {result, ticket} replies of a fair acquire.
	fair bool
	// flag is announce's flag, the last of args, for a script that
	// announces: sent as it is to the nodes in loud, with Mode Quiet (the
	// arguments quiet) to the others; see [request.announce].
	flag  script.Flag
	loud  uint64
	quiet []string
	// need is the number of yes that makes a quorum; 0 means a majority
	// (a semaphore's permits need more, see [SemaphoreQuorum]).
	need int
	// plain lets the nodes that implement driver.Setter run the acquire
	// script as SET NX (setnx.go).
	plain bool
}

// quorum is the number of yes among n nodes that makes req's quorum.
func (r *request) quorum(n int) int {
	if r.need > 0 {
		return r.need
	}
	return quorum(n)
}

// argsFor returns the arguments for node i.
func (r *request) argsFor(i int) []string {
	if r.quiet != nil && !r.loudOn(i) {
		return r.quiet
	}
	return r.args
}

// loudOn reports whether node i is among those that announce.
func (r *request) loudOn(i int) bool { return i < 64 && r.loud&(1<<i) != 0 }

type reply struct {
	node   int
	yes    bool
	val    int64
	ticket int64
	err    error
}

// poll sends req to every node at once, all under one deadline, the node
// timeout from now, and counts the answers. When it stops early, the
// replies still due arrive on the returned pending, which is nil otherwise.
//
// The requests run under a context of [driver.WithNodeDeadline], which only
// their deadline ends while they run: poll itself stops waiting when ctx
// ends, counting the nodes that have not answered as failed with ctx's
// error, and their requests end by their deadline. So an adapter need not
// watch each request for a cancellation (see [driver.DeadlineOnly]). When
// req stops early, the replies still due after ctx ended are handed back as
// a pending, so that a grant that comes late is released.
func (m *Manager) poll(ctx context.Context, req *request) (vote, *pending) {
	n := len(m.nodes)
	var v vote
	if req.fenced {
		v.fences = make([]int64, n)
	}
	if n == 1 {
		// On this goroutine, under a context that ends with ctx: the
		// adapter returns when ctx ends.
		actx, cancel := context.WithTimeout(ctx, req.timeout)
		r := m.ask(actx, 0, req)
		cancel()
		v.count(r, n)
		v.cut = r.err != nil && ctx.Err() != nil
		return v, nil
	}
	nctx, cancel := driver.WithNodeDeadline(ctx, time.Now().Add(req.timeout))
	replies := make(chan reply, n) // buffered: late senders never block
	asked := 0
	for i := range m.nodes {
		if req.only == nil || req.only[i] {
			asked++
			m.spawnAsk(nctx, i, req, replies)
		}
	}
	answered := make([]bool, n)
	q := req.quorum(n)
	done := ctx.Done()
	for got := 1; got <= asked; got++ {
		var r reply
		select {
		case r = <-replies:
		case <-done:
			return v, m.abandon(&v, ctx.Err(), req, answered, &pending{replies: replies, left: asked - got + 1, answered: answered, cancel: cancel})
		}
		v.count(r, n)
		answered[r.node] = true
		if !req.early {
			continue
		}
		// Stop at a quorum of yes, or once none is possible and the
		// replies still due cannot change whether failures alone
		// prevented it (QuorumError.Is), so the error does not depend
		// on which nodes happened to answer first.
		left := asked - got
		if left > 0 && (v.yes >= q || (v.yes+left < q && (v.failed > n-q || v.failed+left <= n-q))) {
			// The requests still due keep the deadline; it ends with
			// the last of them, or by itself.
			return v, &pending{replies: replies, left: left, answered: answered, cancel: cancel}
		}
	}
	cancel()
	return v, nil
}

// abandon counts in v the nodes asked by req that have not answered as
// failed with err, the error of the context the caller gave up on, and returns p,
// the replies still due, if req stops early (its caller releases what they
// grant) and nil otherwise. The requests still due end by their deadline.
func (m *Manager) abandon(v *vote, err error, req *request, answered []bool, p *pending) *pending {
	v.cut = true
	for i, a := range answered {
		if !a && (req.only == nil || req.only[i]) {
			v.count(reply{node: i, err: &NodeError{Node: m.addrs[i], Err: err}}, len(answered))
		}
	}
	if req.early {
		return p
	}
	return nil
}

// pending holds the replies a poll stopped waiting for.
type pending struct {
	replies  <-chan reply
	left     int
	answered []bool // the nodes whose reply was counted
	cancel   context.CancelFunc
}

// next returns the next reply still due, and ends the requests' deadline
// after the last one.
func (p *pending) next() reply {
	r := <-p.replies
	if p.left--; p.left == 0 {
		p.cancel()
	}
	return r
}

// wait waits for the replies still due; each request ends by its node
// timeout.
func (p *pending) wait() {
	for p.left > 0 {
		p.next()
	}
}

// release runs the release script on the nodes and waits for all of them.
// It runs even when ctx is done, each node bounded by the node timeout,
// because a key left behind blocks every other client for its TTL.
func (m *Manager) release(ctx context.Context, cfg *config, rkeys []string, secret, waiter string, granted uint64) vote {
	v, _ := m.poll(context.WithoutCancel(ctx), releaseRequest(cfg, rkeys, secret, waiter, granted))
	return v
}

// releaseAttempt releases a failed attempt on every node that may hold it:
// those that granted it, failed, or had not answered yet — not those that
// refused, which wrote nothing. A node is released only after its acquire
// request answered or failed, so that the release cannot overtake the
// acquire on another connection and leave the key behind until its TTL.
// The nodes that granted are released before releaseAttempt returns; the
// nodes whose acquire failed (likely slow or unreachable) and those still
// due are released in the background, which ends within two node timeouts,
// so an unreachable node does not cost the caller a second timeout.
//
// When a node refused the attempt, the release is not announced (but with
// fairness, whose release wakes the next in line): another holder has the
// lock, and its release is what waiters wait for. Announced, the release of
// keys the attempt took on nodes that holder lacks would wake every waiter,
// this caller too, which would try again at once, take the same keys and
// release them again: attempts at the pace of a round trip instead of the
// retry delay, for as long as the holder keeps the lock.
func (m *Manager) releaseAttempt(ctx context.Context, cfg *config, rkeys []string, secret string, v *vote, p *pending) {
	req := releaseRequest(cfg, rkeys, secret, "", v.granted) // the waiter keeps its place
	if v.no > 0 && cfg.fair == nil {
		req.loud = 0
	}
	m.releaseAttemptWith(ctx, req, v, p)
}

// releaseAttemptWith is releaseAttempt with the release request req.
func (m *Manager) releaseAttemptWith(ctx context.Context, req *request, v *vote, p *pending) {
	ctx = context.WithoutCancel(ctx)
	granted := make([]bool, len(m.nodes))
	asked := false
	for i := range granted {
		answered := p == nil || p.answered[i]
		switch {
		case !answered, v.saidNo(i, answered):
		case v.errs != nil && v.errs[i] != nil:
			m.spawn(func() { m.askAlone(ctx, i, req) })
		default:
			granted[i], asked = true, true
		}
	}
	if p != nil {
		m.spawnFanOut(func(spawn func(func())) {
			for p.left > 0 {
				if r := p.next(); r.err != nil || r.yes {
					// At once, not after the previous one, even
					// while the Manager closes.
					spawn(func() { m.askAlone(ctx, r.node, req) })
				}
			}
		})
	}
	if asked {
		req.only = granted
		m.poll(ctx, req)
	}
}

// releaseRequest deletes the lock keys that hold secret, announced by two
// of the nodes marked in loud. With fairness, it also gives up the place in
// line of waiter, which obtained the lock ("" for none).
func releaseRequest(cfg *config, rkeys []string, secret, waiter string, loud uint64) *request {
	req := &request{
		op: opUnlock, script: script.Release, keys: rkeys, args: append(make([]string, 0, 3), secret),
		want: int64(len(rkeys)), timeout: cfg.timeout(),
	}
	if cfg.fair != nil {
		req.script = script.FairRelease
		req.keys = append(rkeys[:len(rkeys):len(rkeys)], script.LineKeys(rkeys[0])[:2]...)
		req.args = append(req.args, waiter)
	}
	req.announce(script.Flag{Mode: script.Loud}, wake.Announcers(loud))
	return req
}

// askAlone runs req on node i under a node timeout of its own, which alone
// ends it: ctx's cancellation does not.
func (m *Manager) askAlone(ctx context.Context, i int, req *request) reply {
	ctx, cancel := driver.WithNodeDeadline(ctx, time.Now().Add(req.timeout))
	defer cancel()
	return m.ask(ctx, i, req)
}

// ask runs req on node i within ctx, which bounds it.
func (m *Manager) ask(ctx context.Context, i int, req *request) reply {
	if err := m.admit(ctx, i); err != nil {
		return reply{node: i, err: &NodeError{Node: m.addrs[i], Err: err}}
	}
	res, err := m.eval(ctx, i, req)
	if err != nil {
		return reply{node: i, err: &NodeError{Node: m.addrs[i], Err: m.redirected(i, err)}}
	}
	var ticket int64
	if pair, ok := res.([]any); ok && req.fair && len(pair) == 2 {
		res, ticket = pair[0], asInt(pair[1])
	}
	got, ok := res.(int64)
	if !ok {
		return reply{node: i, err: &NodeError{Node: m.addrs[i], Err: fmt.Errorf("%s script: unexpected reply of type %T", req.op, res)}}
	}
	if got < 0 {
		return reply{node: i, err: &NodeError{Node: m.addrs[i], Err: ErrNodeRestarted}}
	}
	if req.fenced {
		return reply{node: i, yes: got > 0, val: got, ticket: ticket}
	}
	return reply{node: i, yes: got == req.want, ticket: ticket}
}

// asInt returns v as an int64, or 0 when it is none.
func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func (v *vote) count(r reply, nodes int) {
	v.ticket = max(v.ticket, r.ticket)
	switch {
	case r.err != nil:
		v.failed++
		if v.errs == nil {
			v.errs = make([]error, nodes)
		}
		v.errs[r.node] = r.err
	case r.yes:
		v.yes++
		if r.node < 64 {
			v.granted |= 1 << r.node
		}
		if v.fences != nil {
			v.fences[r.node] = r.val
		}
	default:
		v.no++
	}
}

// quorumInTime reports whether v holds q yes that came within the validity
// of ttl, counted from start, when the requests were sent; until is the end
// of that validity either way. It is where a grant is decided: the attempts
// of every kind of lock and every extension count through it. A grant that
// comes later than that is no grant: the caller releases it, or lets it run
// out.
func (c *config) quorumInTime(v *vote, q int, ttl time.Duration, start time.Time) (until time.Time, ok bool) {
	validity := c.validity(ttl)
	return start.Add(validity), v.yes >= q && time.Since(start) < validity
}

// quorum is the majority of n nodes.
func quorum(n int) int { return n/2 + 1 }

// failure builds the error for a vote that fell short, node errors in node
// order.
func (v *vote) failure(op, key string, nodes int, expired bool) *QuorumError {
	return v.failureOf(op, key, nodes, quorum(nodes), expired)
}

// failureOf is failure for a quorum of q nodes.
func (v *vote) failureOf(op, key string, nodes, q int, expired bool) *QuorumError {
	e := &QuorumError{
		Op: op, Key: key, Nodes: nodes, Quorum: q,
		For: v.yes, Against: v.no, Failed: v.failed, Expired: expired,
	}
	if v.errs != nil {
		var merr *multierror.Error
		for _, err := range v.errs {
			if err != nil {
				merr = multierror.Append(merr, err)
			}
		}
		merr.ErrorFormat = listErrors
		e.Err = merr
	}
	return e
}

// listErrors formats node failures on one line, unlike multierror's default.
func listErrors(errs []error) string {
	s := ""
	for i, err := range errs {
		if i > 0 {
			s += "; "
		}
		s += err.Error()
	}
	return s
}
