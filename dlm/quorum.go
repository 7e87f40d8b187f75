package dlm

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// The quorum round, the fan-out to the nodes, the counting of votes and
// the release of what a failed round granted, is package round's
// ([round.Round]); what follows is what package dlm asks of it.

// quorumRounds is a manager's quorum rounds over its nodes: package
// round's rounds, with the requests of package dlm that take more than
// one round or read the nodes' replies themselves (a release, a fenced
// grant's token, a resumed token, a waiter leaving the lines).
type quorumRounds struct {
	*round.Round
	nodes nodeSet
	// work runs the rounds sent in the background, which end when done,
	// the manager's, is closed.
	work *round.Pool
	done <-chan struct{}
}

// newQuorumRounds returns r, the rounds over nodes, with the requests of
// package dlm: those sent in the background run on work until done is
// closed.
func newQuorumRounds(r *round.Round, nodes nodeSet, work *round.Pool, done <-chan struct{}) *quorumRounds {
	return &quorumRounds{Round: r, nodes: nodes, work: work, done: done}
}

// release runs the release script on the nodes and waits for all of them:
// each node frees the keys that hold secret (or are reserved for the
// waiter whose id is waiterID, which obtained the lock, "" for none) and hands them on to the
// head of their lines. It runs even when ctx is done, each node bounded by
// the node timeout, because a key left behind blocks every other client for
// its TTL. It returns the vote and the request, which the caller may send
// again to the nodes that failed it.
func (q *quorumRounds) release(ctx context.Context, cfg *config, rkeys []string, secret, waiterID string) (round.Vote, *round.Request) {
	req := releaseRequest(cfg, rkeys, secret, &waiter{id: waiterID}, script.ReleaseLock, false)
	v, _ := q.Poll(context.WithoutCancel(ctx), req)
	return v, req
}

// releaseRequest releases the lock keys that hold secret, the lock's
// (how is [script.ReleaseLock]) or a failed attempt's, for the waiter w
// (nil for none), as [script.Release] describes. The lock's release is announced by every node, which names the
// waiter it hands a key to; a failed attempt's announces nothing. It
// deletes a writer's intent with each key, unless waits: the release of the
// failed attempt of a writer that waits on, whose intent must stay.
func releaseRequest(cfg *config, rkeys []string, secret string, w *waiter, how string, waits bool) *round.Request {
	var ticket int64
	life := DefaultPlaceExpiry
	if w != nil {
		ticket, life = w.ticket, w.life
	}
	req := &round.Request{
		Op: opUnlock, Script: script.Release, Keys: append(rkeys[:len(rkeys):len(rkeys)], script.LinesOf(rkeys)...),
		Args: append(make([]string, 0, 8), secret, w.waiterID(), strconv.FormatInt(ticket, 10), ttlMillis(life),
			ttlMillis(cfg.reservation()), how, decimal(int64(cfg.lineBound()))),
		Want: int64(len(rkeys)), Timeout: cfg.timeout(), Cap: cfg.timeoutCap(),
	}
	if how == script.ReleaseLock {
		req.Announce(loudFlag, allNodes)
	} else {
		req.Announce(script.Flag{WriterWaits: waits}, 0)
	}
	return req
}

// loudFlag is the flag of a request that announces on every node.
var loudFlag = script.Flag{Mode: script.Loud}

// quorumInTime reports whether v holds q yes that came within the validity of
// ttl, counted from start: see [round.Vote.InTime], where a grant is
// decided.
func (c *config) quorumInTime(v *round.Vote, q int, ttl time.Duration, start time.Time) (until time.Time, ok bool) {
	return v.InTime(q, c.validity(ttl), start)
}

// failureOf builds the error for a vote that fell short of a quorum of q
// among nodes, node errors in node order.
func failureOf(v *round.Vote, op, key string, nodes, q int, expired bool) *QuorumError {
	e := &QuorumError{
		Op: op, Key: key, Nodes: nodes, Quorum: q,
		For: v.Yes, Against: v.No, Failed: v.Failed, Expired: expired,
	}
	if v.Errs != nil {
		var merr *multierror.Error
		for _, err := range v.Errs {
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
