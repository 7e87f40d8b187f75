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
	v, _ := m.rounds.Poll(context.WithoutCancel(ctx), releaseRequest(cfg, rkeys, secret, waiter, granted, false))
	return v
}

// releaseRequest deletes the lock keys that hold secret, announced by two
// of the nodes marked in loud. With fairness, it also gives up the place in
// line of waiter, which obtained the lock ("" for none). It deletes a
// writer's intent with each key, unless waits: the release of the failed
// attempt of a writer that waits on, whose intent must stay (see
// [script.Release]).
func releaseRequest(cfg *config, rkeys []string, secret, waiter string, loud uint64, waits bool) *round.Request {
	req := &round.Request{
		Op: opUnlock, Script: script.Release, Keys: rkeys, Args: append(make([]string, 0, 3), secret),
		Want: int64(len(rkeys)), Timeout: cfg.timeout(),
	}
	if cfg.fair != nil {
		req.Script = script.FairRelease
		req.Keys = append(rkeys[:len(rkeys):len(rkeys)], script.LineKeys(rkeys[0])[:2]...)
		req.Args = append(req.Args, waiter)
	}
	req.Announce(script.Flag{Mode: script.Loud, WriterWaits: waits}, wake.Announcers(loud))
	return req
}

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
