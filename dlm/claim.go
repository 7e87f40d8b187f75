package dlm

import (
	"context"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// A claim is one call for a lock of any kind — the mutex, a read lock, a
// semaphore's permit — as the one acquisition path ([Manager.acquire]) and
// the one attempt loop ([Manager.attempts]) see it. The kind supplies what
// differs: its requests, its quorum, what its vote settles, and its name in
// errors; the path does the rest the same way for all.
type claim struct {
	kind  *leaseKind // nil for the mutex
	keys  []string   // as the caller named them
	rkeys []string   // the keys its requests name: the lock keys, or the lease's
	// waiter is a waiting call's place in the nodes' lines (the mutex's);
	// nil for a call that takes none.
	waiter *waiter
	// line is the call's turn at the head of the manager's queue, nil
	// outside it: the attempts it completes tell the callers queued behind
	// it what keeps them waiting.
	line *turn
}

// acquire makes one attempt at c's lock: its acquire request on every node
// at once; a lock when a quorum granted it within the validity, counted from
// the moment the requests were sent; otherwise a release on every node that
// may hold it. Each attempt has a secret of its own, so the release of a
// failed attempt, which may finish in the background, can never delete what
// a later attempt obtained. waiting says the caller will try again: refused
// by readers, a writer's attempt keeps new readers out (see [Manager.RLock]).
func (m *Manager) acquire(ctx context.Context, cfg *config, c *claim, waiting bool) (*Lock, error) {
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	req := c.request(m, cfg, secret, waiting)
	v, pend := m.rounds.Poll(ctx, req)
	q := c.quorum(len(m.nodes))
	token := c.settle(ctx, m, cfg, secret, &v, q)
	until, ok := cfg.quorumInTime(&v, q, cfg.ttl, start)
	elapsed := time.Since(start)
	key := keyName(c.keys)
	if ok {
		cfg.emitVote(ctx, &v, Event{Kind: EventAttempt, Op: opLock, Key: key, Start: start, Duration: elapsed, Token: uint64(token)}, m.nodes)
		g := grant{secret: secret, token: uint64(token), pend: pend, waiterID: c.waiter.waiterID(), late: failedNodes(&v), lateUntil: start.Add(cfg.ttl)}
		if pend != nil {
			g.due = pend.Due()
		}
		return &Lock{m: m, cfg: *cfg, claim: *c, grant: g, validity: validity{until: until}, obtained: time.Now()}, nil
	}
	// Release everywhere, also where the reply was an error or never came:
	// the request may have been applied all the same, and may be yet,
	// after the release: that is sent again until the attempt's keys would
	// expire (rerelease.go).
	rreq := c.releaseRequest(ctx, cfg, secret, waiting)
	rreq.Until = start.Add(cfg.ttl)
	released := m.rounds.ReleaseAttempt(ctx, rreq, &v, pend, m.redo)
	if c.waiter != nil {
		c.waiter.placed = true // the release gives it its place back
		c.waiter.released = released
	}
	qerr := c.failure(&v, opLock, len(m.nodes), q, v.Yes >= q)
	cfg.emitVote(ctx, &v, Event{Kind: EventAttempt, Op: opLock, Key: key, Start: start, Duration: elapsed, Err: qerr}, m.nodes)
	if ctx.Err() != nil {
		return nil, attemptStopped(ctx, c.what(), key, &v, qerr)
	}
	return nil, qerr
}

// failedNodes returns the mask of the nodes (0 to 63) that failed v's
// request.
func failedNodes(v *round.Vote) uint64 {
	var mask uint64
	for i, err := range v.Errs {
		if err != nil && i < 64 {
			mask |= 1 << i
		}
	}
	return mask
}

// request is c's acquire request with secret: for the mutex, the script
// that fencing, the restart guard and fairness call for, by SET NX where
// the node allows it (see [plainAcquire]); for a lease, its kind's.
//
// An election's attempt waits for every node's answer, each within the
// node timeout, rather than for the first quorum: its value is then
// stored on every node that granted it (settle), so that observers find
// it on a quorum with one of those nodes down, or answering another value
// (see [Election.read]). A node that does not answer costs the attempt a
// node timeout.
func (c *claim) request(m *Manager, cfg *config, secret string, waiting bool) *round.Request {
	if c.kind != nil {
		return c.kind.acquireRequest(cfg, c.rkeys, secret)
	}
	req := acquireRequest(cfg, c.rkeys, secret, c.waiter, waiting)
	req.Plain = m.plain.usable(cfg, c.rkeys, c.waiter)
	if cfg.leader != nil || cfg.owner != nil {
		// The value or label goes to every node that granted: the
		// attempt waits for them all.
		req.Early = false
	}
	return req
}

// quorum is the number of nodes among n that must grant c.
func (c *claim) quorum(n int) int {
	if c.kind != nil {
		return c.kind.quorum(n)
	}
	return round.Majority(n)
}

// settle does what c's vote v calls for before it is judged, and returns
// the fencing token of a grant (0 without fencing). For the mutex: a
// refusal marks the keys contended (no SET NX for a while), and gives the
// waiter a place in line; with
// fencing a quorum of grants counts only once a quorum holds its token,
// which may lower v.Yes. Leases have nothing to settle.
func (c *claim) settle(ctx context.Context, m *Manager, cfg *config, secret string, v *round.Vote, q int) (token int64) {
	if c.kind != nil {
		return 0
	}
	if v.No > 0 {
		m.plain.contend(c.rkeys)
	}
	if w := c.waiter; w != nil {
		if v.No > 0 || v.Ticket > 0 {
			w.placed = true
		}
		w.heldFor, w.unnamed = v.FreeIn(q), v.Listened(len(m.nodes), q)
	}
	if cfg.fencing.on && v.Yes >= q {
		token, v.Yes = m.rounds.settleFence(ctx, cfg, c.rkeys, secret, v)
	}
	if cfg.owner != nil && v.Yes >= q {
		m.rounds.storeOwner(ctx, cfg, c.rkeys[0], secret, v.Granted)
	}
	if cfg.leader != nil && v.Yes >= q {
		// The value on a quorum, and the token: both are needed.
		v.Yes = min(v.Yes, m.rounds.storeLeader(ctx, cfg, c.rkeys[0], secret, *cfg.leader, v.Granted))
	}
	return token
}

// releaseRequest releases a failed attempt of c, and announces nothing: the
// attempt's release must never wake anyone, its own caller least of all,
// which would try again at once, take the same keys (those another holder
// lacks) and release them again — attempts at the pace of a round trip
// instead of the retry delay, for as long as the holder keeps the lock.
// The mutex's waiter keeps its place in line, and, when a wake-up started
// the attempt, the keys the nodes handed it stay reserved for it
// ([script.ReleaseKeepTurn]). When ctx ended, the caller stops waiting: the
// attempt is released as a lock is, which hands the keys on to the next in
// line and takes the waiter out of the lines. A writer that waits on keeps its intent: the
// nodes that granted this attempt must not let new readers in while it
// waits.
func (c *claim) releaseRequest(ctx context.Context, cfg *config, secret string, waiting bool) *round.Request {
	if c.kind != nil {
		return c.kind.releaseRequest(cfg, c.rkeys, secret, false)
	}
	w, how := c.waiter, script.ReleaseAttempt
	switch {
	case w != nil && ctx.Err() != nil:
		// The caller stops waiting: it leaves the lines, and what the
		// attempt took, or a release handed to it, goes to the next in
		// line, as the lock's release would.
		how, waiting = script.ReleaseLock, false
	case w != nil && w.woken:
		how = script.ReleaseKeepTurn
	}
	return releaseRequest(cfg, c.rkeys, secret, w, how, waiting)
}

// failure is the error of an operation op on c's lock among nodes whose
// vote v fell short of q.
func (c *claim) failure(v *round.Vote, op string, nodes, q int, expired bool) *QuorumError {
	e := failureOf(v, op, keyName(c.keys), nodes, q, expired)
	if c.kind != nil {
		e.what = c.kind.what
	}
	return e
}

// what names c's lock in errors: opLock for the mutex, the kind of lease
// otherwise.
func (c *claim) what() string {
	if c.kind == nil {
		return opLock
	}
	return c.kind.what
}

// wake returns the keys whose releases wake c: the lock keys, or a lease's
// first key.
func (c *claim) wake() []string {
	if c.kind == nil {
		return c.rkeys
	}
	return c.rkeys[:1]
}
