package dlm

import (
	"context"
	"math/bits"
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
	kind  *leaseKind  // nil for the mutex
	keys  []string    // as the caller named them
	rkeys []string    // the keys its requests name: the lock keys, or the lease's
	fw    *fairWaiter // the mutex with fairness: its place in the nodes' lines
	// line is the call's turn at the head of the manager's queue, nil
	// outside it: the attempts it completes tell the callers queued behind
	// it what keeps them waiting.
	line *turn
}

// waiter is the id under which c's lock waits in the nodes' lines
// (fairness), "" without one: the wake-ups of that line name it, and nodes
// that did not grant the lock may still keep its place, which the release
// gives up.
func (c *claim) waiter() string {
	if c.fw == nil {
		return ""
	}
	return c.fw.id
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
	secret += cfg.secretSuffix
	start := time.Now()
	req := c.request(m, cfg, secret, waiting)
	v, pend := m.rounds.Poll(ctx, req)
	q := c.quorum(len(m.nodes))
	token := c.settle(ctx, m, cfg, secret, &v, q)
	until, ok := cfg.quorumInTime(&v, q, cfg.ttl, start)
	elapsed := time.Since(start)
	key := keyName(c.keys)
	if ok {
		cfg.emitVote(ctx, &v, Event{Kind: EventAttempt, Op: opLock, Key: key, Start: start, Duration: elapsed, Token: uint64(token)}, m.addrs)
		g := grant{secret: secret, token: uint64(token), granted: v.Granted, pend: pend}
		return &Lock{m: m, cfg: *cfg, claim: *c, grant: g, validity: validity{until: until}}, nil
	}
	// Release everywhere, also where the reply was an error or never came:
	// the request may have been applied all the same.
	own := announcedGrants(req, v.MayHold(len(m.nodes), pend), len(c.rkeys))
	m.rounds.ReleaseAttempt(ctx, c.releaseRequest(cfg, secret, &v, waiting), &v, pend)
	qerr := c.failure(&v, opLock, len(m.nodes), q, v.Yes >= q)
	qerr.ownGrants = own
	cfg.emitVote(ctx, &v, Event{Kind: EventAttempt, Op: opLock, Key: key, Start: start, Duration: elapsed, Err: qerr}, m.addrs)
	if ctx.Err() != nil {
		return nil, attemptStopped(ctx, c.what(), key, &v, qerr)
	}
	return nil, qerr
}

// announcedGrants is how many grants of an attempt's own its nodes may
// have announced: one per key on each node in mayHold that announces
// grants. It is an upper bound: a node that had not answered may have
// refused, and one that took the SET NX path announced nothing.
func announcedGrants(req *round.Request, mayHold uint64, keys int) int {
	if req.Flag.Mode == script.Quiet {
		return 0
	}
	return bits.OnesCount64(mayHold&req.Loud) * keys
}

// request is c's acquire request with secret: for the mutex, the script
// that fencing, the restart guard and fairness call for, by SET NX where
// the node allows it (see [plainAcquire]); for a lease, its kind's.
func (c *claim) request(m *Manager, cfg *config, secret string, waiting bool) *round.Request {
	if c.kind != nil {
		return c.kind.acquireRequest(cfg, c.rkeys, secret)
	}
	req := acquireRequest(cfg, c.rkeys, secret, c.fw, waiting)
	req.Plain = m.plainUsable(cfg, c.rkeys, c.fw)
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
// refusal marks the keys contended (no SET NX for a while), a fair waiter
// keeps the highest ticket the nodes gave it, and with fencing a quorum of
// grants counts only once a quorum holds its token, which may lower v.Yes.
// Leases have nothing to settle.
func (c *claim) settle(ctx context.Context, m *Manager, cfg *config, secret string, v *round.Vote, q int) (token int64) {
	if c.kind != nil {
		return 0
	}
	if v.No > 0 {
		m.contend(c.rkeys)
	}
	if c.fw != nil {
		c.fw.ticket = max(c.fw.ticket, v.Ticket)
	}
	if cfg.fencing && v.Yes >= q {
		token, v.Yes = m.settleFence(ctx, cfg, c.rkeys, secret, v)
	}
	return token
}

// releaseRequest releases a failed attempt of c, announced by two of the
// nodes that granted it. A mutex refused by a node is released without
// announcement (but with fairness, whose release wakes the next in line):
// another holder has the lock, and its release is what waiters wait for.
// Announced, the release of keys the attempt took on nodes that holder
// lacks would wake every waiter, this caller too, which would try again at
// once, take the same keys and release them again: attempts at the pace of
// a round trip instead of the retry delay, for as long as the holder keeps
// the lock. A fair waiter keeps its place, and a writer that waits on
// keeps its intent: the nodes that granted this attempt must not let new
// readers in while it waits.
func (c *claim) releaseRequest(cfg *config, secret string, v *round.Vote, waiting bool) *round.Request {
	if c.kind != nil {
		return c.kind.releaseRequest(cfg, c.rkeys, secret, v.Granted)
	}
	req := releaseRequest(cfg, c.rkeys, secret, "", v.Granted, waiting)
	if v.No > 0 && cfg.fair == nil {
		req.Loud = 0
	}
	return req
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
