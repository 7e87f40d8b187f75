package round

import (
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// Request is one script run sent to the nodes.
type Request struct {
	Op     string // the operation, for errors: "lock", "unlock", "extend"
	Script *driver.Script
	Keys   []string
	Args   []string
	// Want is the reply that counts as yes; any other integer is no. A
	// script whose reply has another shape says so (see [script.ShapeOf]):
	// the fenced acquires' counters, the fair acquires' tickets.
	Want int64
	// Timeout bounds each node's request: the fixed timeout, or, when Cap
	// is above it, the floor of the node's learned one (see [RTO]), which
	// never exceeds Cap.
	Timeout time.Duration
	// Cap, when above Timeout, makes each node's timeout the learned one,
	// from Timeout to Cap; otherwise Timeout is fixed.
	Cap time.Duration
	// Early stops waiting once the outcome is known: a quorum of yes, or
	// too few nodes left to reach one. The replies still due are handed
	// back as a Pending; their requests end by their own deadline.
	Early bool
	// Only, when set, limits the request to the nodes marked true.
	Only []bool
	// Flag is announce's flag, the last of Args, for a script that
	// announces: sent as it is to the nodes in Loud, with Mode Quiet (the
	// arguments Quiet) to the others; see [Request.Announce].
	Flag  script.Flag
	Loud  uint64
	Quiet []string
	// Need is the number of yes that makes a quorum; 0 means a majority
	// (a semaphore's permits need more).
	Need int
	// Entries is the number of entries of a batch, a request whose script
	// answers each entry on its own (see [Round.Batch]); 0 otherwise.
	Entries int
	// Plain lets a node's call run the acquire script as SET NX GET. The
	// round never reads it: the decorator of the nodes that can do so
	// does, since whether an attempt may is decided per attempt.
	Plain bool
	// Until is, for a release, when what it frees would expire anyway:
	// sending it again later is of no use (see [Redo]). The round never
	// reads it.
	Until time.Time
}

// Quorum is the number of yes among n nodes that makes r's quorum.
func (r *Request) Quorum(n int) int {
	if r.Need > 0 {
		return r.Need
	}
	return Majority(n)
}

// ArgsFor returns the arguments for node i.
func (r *Request) ArgsFor(i int) []string {
	if r.Quiet != nil && !r.LoudOn(i) {
		return r.Quiet
	}
	return r.Args
}

// LoudOn reports whether node i is among those that announce. Nodes from
// 64 on announce only when every node does (Loud all ones).
func (r *Request) LoudOn(i int) bool {
	if i >= 64 {
		return r.Loud == ^uint64(0)
	}
	return r.Loud&(1<<i) != 0
}

// Announce appends announce's flag to r's arguments: f for the nodes in
// loud, f with Mode Quiet for the others (every node when f is Quiet). It
// is where a request's flag is set; a node that is a Redis Cluster makes
// Loud Sharded in its call.
func (r *Request) Announce(f script.Flag, loud uint64) {
	r.Flag, r.Loud = f, loud
	r.Args = append(r.Args, f.Arg())
	if f.Mode == script.Quiet {
		r.Quiet = r.Args
		return
	}
	q := f
	q.Mode = script.Quiet
	r.Quiet = append(r.Args[:len(r.Args)-1:len(r.Args)-1], q.Arg())
}

// Majority is the majority of n nodes.
func Majority(n int) int { return n/2 + 1 }
