package round

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// Call runs req on one node within ctx, which bounds it, and returns the
// script's reply or the node's failure. Package dlm builds one per node,
// once per manager, as a chain of decorators around the node's Eval.
type Call func(ctx context.Context, req *Request) (any, error)

// Round sends requests to a fixed set of nodes and counts their answers.
// It is safe for concurrent use.
type Round struct {
	calls []Call
	pool  *Pool
	// rto is each node's learned timeout, from the replies to every
	// request sent to it (see [Round.wait]).
	rto []RTO
	// nodeErr wraps a failure of node i as the caller reports it.
	nodeErr func(i int, err error) error
	// restarted is the failure of a node whose script said that it lost
	// its keys (a negative reply).
	restarted error
}

// New returns a round over the nodes whose calls are calls, whose
// goroutines pool owns. nodeErr wraps a node's failure; restarted is the
// failure of a node whose script answered that it restarted.
func New(pool *Pool, calls []Call, nodeErr func(i int, err error) error, restarted error) *Round {
	return &Round{calls: calls, pool: pool, rto: make([]RTO, len(calls)), nodeErr: nodeErr, restarted: restarted}
}

// Timeout returns node i's learned timeout between floor and limit (see
// [RTO.Timeout]).
func (r *Round) Timeout(i int, floor, limit time.Duration) time.Duration {
	return r.rto[i].Timeout(floor, limit)
}

// SRTT returns node i's smoothed round trip, learned from the replies to
// single requests; 0 before the first ([RTO.SRTT]).
func (r *Round) SRTT(i int) time.Duration { return r.rto[i].SRTT() }

// wait is how long a round of req waits for the nodes it asks (those in
// req.Only, or all): req.Timeout, or, when req.Cap is above it, the
// longest of the asked nodes' learned timeouts. The nodes share one
// deadline, which costs no context per node: a node whose own timeout is
// shorter may take the longer one, and a dead node makes an undecided
// round wait at most req.Cap.
func (r *Round) wait(req *Request) time.Duration {
	if req.Cap <= req.Timeout {
		return req.Timeout
	}
	w := req.Timeout
	for i := range r.rto {
		if req.Only == nil || req.Only[i] {
			w = max(w, r.rto[i].Timeout(req.Timeout, req.Cap))
		}
	}
	return w
}

// Poll sends req to every node at once, all under one deadline, the node
// timeout from now (see [Round.wait]), and counts the answers. When it
// stops early, the replies still due arrive on the returned Pending, which
// is nil otherwise.
//
// The requests run under a context of [driver.WithNodeDeadline], which only
// their deadline ends while they run: Poll itself stops waiting when ctx
// ends, counting the nodes that have not answered as failed with ctx's
// error, and their requests end by their deadline. So an adapter need not
// watch each request for a cancellation (see [driver.DeadlineOnly]). When
// req stops early, the replies still due after ctx ended are handed back as
// a Pending, so that a grant that comes late is released.
func (r *Round) Poll(ctx context.Context, req *Request) (Vote, *Pending) {
	n := len(r.calls)
	var v Vote
	if script.ShapeOf(req.Script).Counter {
		v.Fences = make([]int64, n)
	}
	sent := time.Now()
	wait := r.wait(req)
	if n == 1 {
		// On this goroutine, under a context that ends with ctx: the
		// adapter returns when ctx ends.
		actx, cancel := context.WithDeadline(ctx, sent.Add(wait))
		rep := r.ask(actx, 0, req, sent)
		cancel()
		v.Count(rep, n)
		v.Cut = rep.Err != nil && ctx.Err() != nil
		return v, nil
	}
	nctx, cancel := driver.WithNodeDeadline(ctx, sent.Add(wait))
	replies := make(chan Reply, n) // buffered: late senders never block
	asked := 0
	for i := range r.calls {
		if req.Only == nil || req.Only[i] {
			asked++
			r.pool.ask(nctx, r, i, req, sent, replies)
		}
	}
	answered := make([]bool, n)
	q := req.Quorum(n)
	done := ctx.Done()
	for got := 1; got <= asked; got++ {
		var rep Reply
		select {
		case <-done:
			// Ended, also if replies are waiting: a select between two
			// ready cases picks either, and a context that had ended
			// before the call must never yield a grant.
			return v, r.abandon(&v, ctx.Err(), req, answered, &Pending{replies: replies, left: asked - got + 1, answered: answered, cancel: cancel})
		default:
		}
		select {
		case rep = <-replies:
		case <-done:
			return v, r.abandon(&v, ctx.Err(), req, answered, &Pending{replies: replies, left: asked - got + 1, answered: answered, cancel: cancel})
		}
		v.Count(rep, n)
		answered[rep.Node] = true
		if !req.Early {
			continue
		}
		if left := asked - got; left > 0 && v.Settled(n, q, left) {
			// The requests still due keep the deadline; it ends with
			// the last of them, or by itself.
			return v, &Pending{replies: replies, left: asked - got, answered: answered, cancel: cancel}
		}
	}
	cancel()
	return v, nil
}

// abandon counts in v the nodes asked by req that have not answered as
// failed with err, the error of the context the caller gave up on, and
// returns p, the replies still due, if req stops early (its caller releases
// what they grant) and nil otherwise. The requests still due end by their
// deadline.
func (r *Round) abandon(v *Vote, err error, req *Request, answered []bool, p *Pending) *Pending {
	v.Cut = true
	for i, a := range answered {
		if !a && (req.Only == nil || req.Only[i]) {
			v.Count(Reply{Node: i, Err: r.nodeErr(i, err)}, len(answered))
		}
	}
	if req.Early {
		return p
	}
	return nil
}

// Pending holds the replies a Poll stopped waiting for.
type Pending struct {
	replies  <-chan Reply
	left     int
	answered []bool // the nodes whose reply was counted
	cancel   context.CancelFunc
	failed   uint64 // the nodes whose reply, read since, was a failure
}

// next returns the next reply still due, and ends the requests' deadline
// after the last one.
func (p *Pending) next() Reply {
	rep := <-p.replies
	p.read(rep)
	return rep
}

// read records rep, a reply still due that came, and ends the requests'
// deadline after the last one.
func (p *Pending) read(rep Reply) {
	if rep.Err != nil && rep.Node < 64 {
		p.failed |= 1 << rep.Node
	}
	if p.left--; p.left == 0 {
		p.cancel()
	}
}

// Done reports whether every reply still due has come, reading those that
// have without waiting for the others; once it is true, Wait returns at
// once, and the caller may let p go.
func (p *Pending) Done() bool {
	for p.left > 0 {
		select {
		case rep := <-p.replies:
			p.read(rep)
		default:
			return false
		}
	}
	return true
}

// Failed returns the mask of the nodes (0 to 63) whose reply, read by
// Wait or Done so far, was a failure: their request may still run on the
// node later, after a request sent once it failed.
func (p *Pending) Failed() uint64 { return p.failed }

// Due returns the mask of the nodes (0 to 63) whose reply was still due
// when the Poll that returned p stopped waiting: those whose replies p
// holds.
func (p *Pending) Due() uint64 {
	var mask uint64
	for i, a := range p.answered {
		if !a && i < 64 {
			mask |= 1 << i
		}
	}
	return mask
}

// Wait waits for the replies still due; each request ends by its node
// timeout.
func (p *Pending) Wait() {
	for p.left > 0 {
		p.next()
	}
}

// Redo is told of a release that may have left behind what it was sent
// to free on node i, with the release's reply rep: the release failed
// (rep.Err is set), or, when overtaken, the node's acquire request had
// failed and the release freed nothing, so that the acquire may yet run
// on the node after it (a request held in a frozen server's socket, or on
// a connection that lost the race). req is the release; the caller sends
// it again later ([Round.AskOne]). Redo runs on the goroutine that read the
// reply, and must not block.
type Redo func(req *Request, i int, overtaken bool, rep Reply)

// ReleaseAttempt releases a failed attempt, whose vote is v and whose
// replies still due are p (nil for none), by req on every node that may
// hold it: those that granted it, failed, or had not answered yet — not
// those that refused, which wrote nothing. A node is released only after
// its acquire request answered or failed, so that the release cannot
// overtake the acquire on another connection and leave the key behind
// until its TTL. The nodes that granted are released before ReleaseAttempt
// returns; the nodes whose acquire failed (likely slow or unreachable) and
// those still due are released in the background, which ends within two
// node timeouts (each node's learned one, at most req.Cap), so an
// unreachable node does not cost the caller a second timeout. The returned
// channel is closed once the background releases have ended (at once when
// there are none): a caller that attempts again may wait for it, so that
// its next attempt finds what this one took released. It runs even when
// ctx is done.
//
// redo, unless nil, is told of each node whose release failed, and of each
// node whose acquire failed and whose release freed nothing: the acquire
// may still run there after the release (see [Redo]).
func (r *Round) ReleaseAttempt(ctx context.Context, req *Request, v *Vote, p *Pending, redo Redo) <-chan struct{} {
	ctx = context.WithoutCancel(ctx)
	granted := make([]bool, len(r.calls))
	asked, behind := false, false // behind: work left to the background
	var background sync.WaitGroup
	for i := range granted {
		answered := p == nil || p.answered[i]
		switch {
		case !answered, v.SaidNo(i, answered):
		case v.Errs != nil && v.Errs[i] != nil:
			background.Add(1)
			behind = true
			r.pool.Spawn(func() {
				defer background.Done()
				r.releaseAfter(ctx, i, req, true, redo)
			})
		default:
			granted[i], asked = true, true
		}
	}
	if p != nil {
		background.Add(1)
		behind = true
		r.pool.SpawnFanOut(func(spawn func(func())) {
			defer background.Done()
			for p.left > 0 {
				if rep := p.next(); rep.Err != nil || rep.Yes {
					// At once, not after the previous one, even
					// while the manager closes.
					background.Add(1)
					spawn(func() {
						defer background.Done()
						r.releaseAfter(ctx, rep.Node, req, rep.Err != nil, redo)
					})
				}
			}
		})
	}
	if asked {
		req.Only = granted
		rv, _ := r.Poll(ctx, req)
		if rv.Errs != nil && redo != nil {
			for i, err := range rv.Errs {
				if err != nil {
					redo(req, i, false, Reply{Node: i, Err: err})
				}
			}
		}
	}
	if !behind {
		return closed
	}
	done := make(chan struct{})
	r.pool.Spawn(func() {
		background.Wait()
		close(done)
	})
	return done
}

// releaseAfter releases node i by req once its acquire request answered
// (a grant) or failed (overtaken), and tells redo when the release may
// have left something behind.
func (r *Round) releaseAfter(ctx context.Context, i int, req *Request, overtaken bool, redo Redo) {
	rep := r.askAlone(ctx, i, req)
	if redo != nil && (rep.Err != nil || (overtaken && !rep.Yes)) {
		redo(req, i, overtaken, rep)
	}
}

// closed is a closed channel: no background work left.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// MayHold returns the mask of the nodes, among n, that may hold what v's
// request wrote, with p the replies still due (nil for none): those that
// granted it, failed or had not answered — all but those that refused.
// Nodes from 64 on are left out.
func (v *Vote) MayHold(n int, p *Pending) uint64 {
	var mask uint64
	for i := range min(n, 64) {
		if !v.SaidNo(i, p == nil || p.answered[i]) {
			mask |= 1 << i
		}
	}
	return mask
}

// Each sends req to every node at once, all under one deadline, the
// request's timeout from now (or ctx's end, if sooner), and gives f each
// node's reply or failure, wrapped as Poll wraps it, on the node's own
// goroutine. It returns once every call has returned. It counts no vote:
// the reads of a lock's or an election's state judge the replies
// themselves, but reach the nodes through the same calls as every other
// request.
func (r *Round) Each(ctx context.Context, req *Request, f func(i int, v any, err error)) {
	sent := time.Now()
	ctx, cancel := context.WithDeadline(ctx, sent.Add(r.wait(req)))
	defer cancel()
	r.pool.ForEach(len(r.calls), func(i int) {
		v, err := r.calls[i](ctx, req)
		r.learn(ctx, i, req, sent, err)
		if err != nil {
			err = r.nodeErr(i, err)
		}
		f(i, v, err)
	})
}

// One sends req to node i alone, under the request's timeout from now (or
// ctx's end, if sooner), and returns its reply or failure, wrapped as Each
// wraps it: a read that goes on node by node at each node's pace, such as
// a scan of its keys.
func (r *Round) One(ctx context.Context, i int, req *Request) (any, error) {
	sent := time.Now()
	ctx, cancel := context.WithDeadline(ctx, sent.Add(r.wait(req)))
	defer cancel()
	v, err := r.calls[i](ctx, req)
	r.learn(ctx, i, req, sent, err)
	if err != nil {
		err = r.nodeErr(i, err)
	}
	return v, err
}

// AskOne runs req on node i alone, under a node timeout of its own (the
// node's learned one, see [Request.Cap]) that alone ends it, and reads its
// reply: a request sent again to one node, such as a release retried
// ([Redo]).
func (r *Round) AskOne(ctx context.Context, i int, req *Request) Reply {
	return r.askAlone(ctx, i, req)
}

// askAlone runs req on node i under a node timeout of its own (the node's
// learned one, see [Request.Cap]), which alone ends it: ctx's cancellation
// does not.
func (r *Round) askAlone(ctx context.Context, i int, req *Request) Reply {
	sent := time.Now()
	ctx, cancel := driver.WithNodeDeadline(ctx, sent.Add(r.rto[i].Timeout(req.Timeout, req.Cap)))
	defer cancel()
	return r.ask(ctx, i, req, sent)
}

// ask runs req, sent at sent, on node i within ctx, which bounds it, and
// reads its reply.
func (r *Round) ask(ctx context.Context, i int, req *Request, sent time.Time) Reply {
	res, err := r.calls[i](ctx, req)
	r.learn(ctx, i, req, sent, err)
	if err != nil {
		return Reply{Node: i, Err: r.nodeErr(i, err)}
	}
	shape := script.ShapeOf(req.Script)
	var ticket, left int64
	var open bool
	if pair, ok := res.([]any); ok && shape.Ticketed && len(pair) >= 2 && len(pair) <= 4 {
		t, isInt := pair[1].(int64)
		if !isInt {
			// Written by no script of ours, whose tickets are integers:
			// never read as 0, a grant's.
			return Reply{Node: i, Err: r.nodeErr(i, fmt.Errorf("%s script: ticket of type %T, not an integer", req.Op, pair[1]))}
		}
		res, ticket = pair[0], t
		if ticket < -1 || ticket >= script.FenceLimit {
			// Written by no script of ours: the waiter passes its
			// ticket on to every node, whose line it must not break.
			return Reply{Node: i, Err: r.nodeErr(i, fmt.Errorf("%s script: ticket out of range", req.Op))}
		}
		if len(pair) >= 3 {
			// Only paces the waiter's next attempt: a value out of
			// range is read as none.
			if left = asInt(pair[2]); left < 0 || left > maxLeft {
				left = 0
			}
		}
		open = len(pair) == 4 && asInt(pair[3]) != 0
	}
	got, ok := res.(int64)
	if !ok {
		return Reply{Node: i, Err: r.nodeErr(i, fmt.Errorf("%s script: unexpected reply of type %T", req.Op, res))}
	}
	if got < 0 {
		return Reply{Node: i, Err: r.nodeErr(i, r.restarted)}
	}
	if shape.Counter {
		if got >= script.FenceLimit {
			// Written by no script of ours: a token must stay exact.
			return Reply{Node: i, Err: r.nodeErr(i, fmt.Errorf("%s script: fencing counter not below 2^53", req.Op))}
		}
		return Reply{Node: i, Yes: got > 0, Val: got, Ticket: ticket, Left: left, Open: open}
	}
	return Reply{Node: i, Yes: got == req.Want, Ticket: ticket, Left: left, Open: open}
}

// learn teaches node i's learned timeout what became of req, sent at sent
// within ctx, whose call ended with err: a reply (err nil, whatever its
// content) is a sample of the node's round trip, counted from sent, when
// the round set the deadline, so that it holds what the deadline must
// cover, the wait for a worker included; a request of a learned timeout
// (req.Cap above req.Timeout) that failed at its deadline backs the
// timeout off. Other failures teach nothing: a refused connection fails
// at once, and a request its caller cut short says nothing of the node.
func (r *Round) learn(ctx context.Context, i int, req *Request, sent time.Time, err error) {
	if err == nil {
		r.rto[i].Sample(time.Since(sent))
		return
	}
	if req.Cap <= req.Timeout {
		return
	}
	now := time.Now()
	if d, ok := ctx.Deadline(); (ok && !now.Before(d)) || errors.Is(err, context.DeadlineExceeded) {
		r.rto[i].Expired(now.Sub(sent), req.Timeout, req.Cap)
	}
}

// maxLeft is the longest PTTL a refusal's reply is believed for: a day, in
// ms. A hostile node could otherwise hold a waiter's next attempt back for
// good; a longer one paces it as a refusal without one does.
const maxLeft = 24 * 60 * 60 * 1000

// asInt returns v as an int64, or 0 when it is none.
func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}
