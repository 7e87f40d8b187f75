package round

import (
	"slices"
	"time"
)

// Vote counts the nodes' answers to one request.
type Vote struct {
	Yes, No, Failed int
	Errs            []error // by node index; nil when no node failed
	Fences          []int64 // by node index, for a fenced acquire: the counter a yes carried
	// Granted has bit i set when node i said yes (for nodes 0 to 63; a
	// manager of more nodes treats every node as possibly granted).
	Granted uint64
	Ticket  int64 // the largest ticket the mutex's acquire replies carried
	// lefts are the PTTLs (ms) that the mutex's refusals carried for the
	// keys that refused them, in the order they came; [Vote.FreeIn] reads
	// them.
	lefts []int64
	// Open counts the refusals of the mutex's acquire that found others
	// listening on the broadcast channel of its key: releases there may
	// name no waiter (see [script.Acquire]). Each is one node's word: see
	// [Vote.Listened].
	Open int
	// Cut is set when the caller's context ended before the outcome was
	// known: the nodes still due were counted as failed with its error, so
	// the vote says nothing of the lock or the nodes.
	Cut bool
}

// Reply is one node's answer to a request.
type Reply struct {
	Node   int
	Yes    bool
	Val    int64
	Ticket int64
	Left   int64 // a refusal's PTTL of the key that refused, in ms; 0 for none
	Open   bool  // a refusal found listeners on the key's broadcast channel
	Err    error
}

// SaidNo reports whether node i answered and refused, which for an acquire
// means it wrote nothing.
func (v *Vote) SaidNo(i int, answered bool) bool {
	return answered && i < 64 && v.Granted&(1<<i) == 0 && (v.Errs == nil || v.Errs[i] == nil)
}

// Count adds r, the reply of one of nodes nodes, to v.
func (v *Vote) Count(r Reply, nodes int) {
	v.Ticket = max(v.Ticket, r.Ticket)
	if r.Left > 0 && r.Err == nil && !r.Yes {
		if v.lefts == nil {
			v.lefts = make([]int64, 0, nodes)
		}
		v.lefts = append(v.lefts, r.Left)
	}
	if r.Open {
		v.Open++
	}
	switch {
	case r.Err != nil:
		v.Failed++
		if v.Errs == nil {
			v.Errs = make([]error, nodes)
		}
		v.Errs[r.Node] = r.Err
	case r.Yes:
		v.Yes++
		if r.Node < 64 {
			v.Granted |= 1 << r.Node
		}
		if v.Fences != nil {
			v.Fences[r.Node] = r.Val
		}
	default:
		v.No++
	}
}

// FreeIn returns how long until the mutex's keys could be free on a quorum
// of q nodes, by the PTTLs the refusals carried, unless their holders
// extend or release them: the soonest a new attempt could be granted where
// this one was refused. It is 0 when the replies cannot tell, and where the
// attempt already had q grants.
//
// A node counts as free at once if it granted the attempt (the attempt's
// release frees it); as free when its key runs out if it refused with a
// PTTL; and as never free otherwise: a refusal without a PTTL (the key is
// free but another waiter's turn, or reserved for one), a failure, a node
// whose reply had not come when the vote ended — nothing says when those
// grant. Of the refusals' PTTLs in ascending order, the (q-Yes)-th is thus
// the soonest that q-Yes more nodes could grant; fewer than q-Yes PTTLs
// tell nothing.
//
// No PTTL counts for being the smallest, so one node's cannot decide alone
// what a quorum's keys decide: a node that lies can make the result no
// sooner than the (q-Yes-1)-th smallest of the other nodes' PTTLs, an
// honest node's when q-Yes is at least 2. With q-1 grants the smallest
// PTTL decides, and it may be one node's alone: the caller bounds how soon
// it believes it (see package dlm's waiter.untilTurn).
func (v *Vote) FreeIn(q int) time.Duration {
	k := q - v.Yes
	if k <= 0 || len(v.lefts) < k {
		return 0
	}
	lefts := slices.Clone(v.lefts)
	slices.Sort(lefts)
	return time.Duration(lefts[k-1]) * time.Millisecond
}

// Listened reports whether enough of n nodes said that others listen on
// the key's broadcast channel (Open) for a waiter of quorum q to believe
// it: as many as refuse a quorum, n-q+1 (two of three, three of five). A
// refusal with no node failed counts that many refusals, each of which
// says it when others listen, since they listen on every node. One node's
// word alone (of three or more) would set the pace of the waiter's
// attempts (dlm's waiter.untilTurn) whatever the others said.
func (v *Vote) Listened(n, q int) bool { return v.Open > n-q }

// Settled reports whether v, the answers of some of n nodes with left
// still due, decides a quorum of q: a quorum of yes, or too few nodes left
// to reach one, once the replies still due cannot change whether failures
// alone prevented it, so that the error does not depend on which nodes
// happened to answer first. It is where [Round.Poll] stops early, and where
// the vote of a batch's entry ends (see [Round.Batch]).
func (v *Vote) Settled(n, q, left int) bool {
	return v.Yes >= q || (v.Yes+left < q && (v.Failed > n-q || v.Failed+left <= n-q))
}

// InTime reports whether v holds q yes that came within validity, counted
// from start, when the requests were sent; until is the end of that
// validity either way. It is where a grant is decided: the attempts of
// every kind of lock and every extension count through it. A grant that
// comes later than that is no grant: the caller releases it, or lets it run
// out.
func (v *Vote) InTime(q int, validity time.Duration, start time.Time) (until time.Time, ok bool) {
	return start.Add(validity), v.Yes >= q && time.Since(start) < validity
}
