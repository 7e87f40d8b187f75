package dlm

import (
	"context"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// The quorum round, the fan-out to the nodes, the counting of votes and
// the release of what a failed round granted, is package round's
// ([round.Round]); what follows is what package dlm asks of it.

// release runs the release script on the nodes and waits for all of them.
// It runs even when ctx is done, each node bounded by the node timeout,
// because a key left behind blocks every other client for its TTL.
func (m *Manager) release(ctx context.Context, cfg *config, rkeys []string, secret, waiter string, granted uint64) round.Vote {
	v, _ := m.rounds.Poll(context.WithoutCancel(ctx), releaseRequest(cfg, rkeys, secret, waiter, granted))
	return v
}

// releaseAttempt releases a failed attempt on every node that may hold it,
// by [round.Round.ReleaseAttempt]: the nodes that granted it, failed, or
// had not answered yet, each once its acquire request ended.
//
// When a node refused the attempt, the release is not announced (but with
// fairness, whose release wakes the next in line): another holder has the
// lock, and its release is what waiters wait for. Announced, the release of
// keys the attempt took on nodes that holder lacks would wake every waiter,
// this caller too, which would try again at once, take the same keys and
// release them again: attempts at the pace of a round trip instead of the
// retry delay, for as long as the holder keeps the lock.
func (m *Manager) releaseAttempt(ctx context.Context, cfg *config, rkeys []string, secret string, v *round.Vote, p *round.Pending) {
	req := releaseRequest(cfg, rkeys, secret, "", v.Granted) // the waiter keeps its place
	if v.No > 0 && cfg.fair == nil {
		req.Loud = 0
	}
	m.rounds.ReleaseAttempt(ctx, req, v, p)
}

// releaseRequest deletes the lock keys that hold secret, announced by two
// of the nodes marked in loud. With fairness, it also gives up the place in
// line of waiter, which obtained the lock ("" for none).
func releaseRequest(cfg *config, rkeys []string, secret, waiter string, loud uint64) *round.Request {
	req := &round.Request{
		Op: opUnlock, Script: script.Release, Keys: rkeys, Args: append(make([]string, 0, 3), secret),
		Want: int64(len(rkeys)), Timeout: cfg.timeout(),
	}
	if cfg.fair != nil {
		req.Script = script.FairRelease
		req.Keys = append(rkeys[:len(rkeys):len(rkeys)], script.LineKeys(rkeys[0])[:2]...)
		req.Args = append(req.Args, waiter)
	}
	req.Announce(script.Flag{Mode: script.Loud}, wake.Announcers(loud))
	return req
}

// quorumInTime reports whether v holds q yes that came within the validity of
// ttl, counted from start: see [round.Vote.InTime], where a grant is
// decided.
func (c *config) quorumInTime(v *round.Vote, q int, ttl time.Duration, start time.Time) (until time.Time, ok bool) {
	return v.InTime(q, c.validity(ttl), start)
}

// failure builds the error for a vote that fell short, node errors in node
// order.
func failure(v *round.Vote, op, key string, nodes int, expired bool) *QuorumError {
	return failureOf(v, op, key, nodes, round.Majority(nodes), expired)
}

// failureOf is failure for a quorum of q nodes.
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
