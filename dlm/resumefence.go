package dlm

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// resumeToken returns the fencing token of the lock h describes (see
// [Manager.Resume]), a Handle of a lock of kind (nil for the mutex) over
// rkeys: 0 for a Handle without one, without a round trip;
// otherwise h.Token, once the nodes have confirmed it, or an error.
//
// A fenced grant with token t leaves a quorum of nodes whose counters are t
// while they hold its keys, and no more than a minority of other nodes
// holding them with other counters: nodes whose replies came after the
// grant was decided (docs/fencing.md, settleFence). While a node holds the
// keys under the grant's secret, no other grant changes their counters.
// So the largest value that a quorum of the nodes holding the keys have at
// least, the quorum's counter, is t for a genuine Handle, and h.Token must
// equal it. A resumed token therefore never exceeds what a quorum of
// nodes' counters hold while the keys hold the secret, and every later
// grant, whose quorum shares a node with that one, gets a greater token.
func (q *quorumRounds) resumeToken(ctx context.Context, cfg *config, kind *leaseKind, key string, rkeys []string, h *Handle) (uint64, error) {
	switch {
	case h.Token == 0:
		return 0, nil
	case h.Token >= script.FenceLimit:
		return 0, fmt.Errorf("%w: resume %q: the Handle's fencing token is not below 2^53, which no grant reaches", ErrInvalid, key)
	case kind != nil:
		return 0, fmt.Errorf("%w: resume %q: the Handle of a %s carries a fencing token, which leases never have", ErrInvalid, key, kind.what)
	case !cfg.fencing.on:
		return 0, fmt.Errorf("%w: resume %q: the Handle carries a fencing token: resume a fenced lock WithFencing", ErrInvalid, key)
	}
	v, counters := q.readFence(ctx, cfg, rkeys, h.Secret)
	need := round.Majority(len(q.nodes))
	if v.Yes < need {
		qerr := failureOf(&v, opResume, key, len(q.nodes), need, false)
		if ctx.Err() != nil {
			return 0, fmt.Errorf("dlm: resume %q: %w (%v)", key, ctx.Err(), qerr)
		}
		return 0, qerr
	}
	slices.Sort(counters)
	if held := counters[len(counters)-need]; held != h.Token {
		return 0, fmt.Errorf("%w: resume %q: the Handle's fencing token %d is not the %d that a quorum of the nodes holding the lock keeps for its grant",
			ErrInvalid, key, h.Token, held)
	}
	return h.Token, nil
}

// readFence reads, on every node at once, whether the lock keys rkeys hold
// secret and their fencing counters. In the vote, a node that holds them is
// a yes, one that does not a no; counters has, for each yes, the smallest
// of that node's counters. A reply of another shape, or a counter that is
// no integer below [script.FenceLimit], is the node's failure: a node's
// reply is untrusted.
func (q *quorumRounds) readFence(ctx context.Context, cfg *config, rkeys []string, secret string) (round.Vote, []uint64) {
	n := len(q.nodes)
	replies := make([]round.Reply, n)
	least := make([]uint64, n)
	req := &round.Request{Op: opResume, Script: script.ReadFence, Keys: fencedKeys(rkeys), Args: []string{secret}, Timeout: cfg.timeout()}
	q.Each(ctx, req, func(i int, res any, err error) {
		replies[i] = round.Reply{Node: i, Err: err}
		if err != nil {
			return
		}
		c, held, err := parseFence(res, len(rkeys))
		if err != nil {
			replies[i].Err = q.nodes.nodeError(i, err)
			return
		}
		replies[i].Yes, least[i] = held, c
	})
	var v round.Vote
	var counters []uint64
	for i, r := range replies {
		v.Count(r, n)
		if r.Yes {
			counters = append(counters, least[i])
		}
	}
	return v, counters
}

// parseFence reads the read-fence script's reply res for a lock of keys
// keys: whether the node holds them, and then the smallest of their
// counters.
func parseFence(res any, keys int) (least uint64, held bool, err error) {
	vals, ok := res.([]any)
	switch {
	case !ok:
		return 0, false, fmt.Errorf("%s script: unexpected reply of type %T", opResume, res)
	case len(vals) == 0:
		return 0, false, nil
	case len(vals) != keys:
		return 0, false, fmt.Errorf("%s script: %d counters for %d keys", opResume, len(vals), keys)
	}
	for i, v := range vals {
		s, _ := v.(string)
		c, err := strconv.ParseUint(s, 10, 64)
		if err != nil || c >= script.FenceLimit {
			// Neither the value nor its length: it is whatever the key
			// held, and the error may be logged.
			return 0, false, fmt.Errorf("%s script: fencing counter %d is no integer below 2^53", opResume, i+1)
		}
		if i == 0 || c < least {
			least = c
		}
	}
	return least, true, nil
}
