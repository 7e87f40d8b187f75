package dlm

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// The plain acquire: a node that implements [driver.Setter] takes a free key
// by SET key secret NX GET PX ttl instead of the acquire script, which costs
// the server several times as much (12–18 µs against about 3 µs a call).
//
// Invariant: a node counts as a grant only where the key was free when the
// request ran, and then holds the secret with the full TTL, or where it
// already holds the attempt's own secret (set by an earlier copy of the same
// request, within the attempt, hence after its start), or where the script
// sent after it granted. That is what the script grants, so quorum,
// validity and the proof in docs/design.md are unchanged. What the command
// skips is what only contention needs: the grant is not announced, so a
// waiter woken by the previous release is not sent back to sleep and tries
// once in vain. A writer's intent is left in place by either path, and
// deleted at the release ([script.Release]); readers are kept out by the
// lock itself meanwhile.
//
// What it cannot skip, the intent of a writer that will wait, refused by
// readers, the script records within the same attempt (see
// [plainAcquire.setNX]): whether a writer's attempt keeps new readers out never
// depends on which path it took.
//
// A manager sends the command only for a key it has not seen contended: a
// key any node refused within contendedFor goes through the script, which
// also serves the retries of a waiting Lock that come sooner. The command is
// sent only for a lock over one key, without fencing, fairness, the restart
// guard or replica acknowledgements, whose scripts do more than SET, and
// never for a waiter that has a place in the nodes' lines: a key handed to
// it is reserved for it, which only the script takes, and the script
// renews its place. And it
// is sent to a node only after the node ran the acquire script once, so
// that an ACL that refuses what the scripts need is reported by the first
// Lock, not by an Unlock.
//
// A plainAcquire is the manager's part, shared by its nodes; each node
// keeps its own in a [plainState].
type plainAcquire struct {
	// contended holds, by a hash of the key, the time (since born) until
	// which keys of that hash go through the script. Keys that share a slot
	// share it: a collision only sends the script where the command would
	// have done.
	contended [contendedSlots]atomic.Int64
	// contendFor is contendedFor; the tests shorten it.
	contendFor atomic.Int64
	seed       maphash.Seed
	born       time.Time
}

// plainState is one node's part of the plain acquire.
type plainState struct {
	// proven is set once the node ran the acquire script.
	proven atomic.Bool
	// rest is the time (since the plain acquire was made) until which the
	// node's command is not sent: it failed where the script answered.
	rest atomic.Int64
}

const (
	// contendedFor is how long a key refused by a node is acquired by the
	// script: as long as a waiter's subscription lingers.
	contendedFor = wake.Linger
	// contendedSlots is the size of the table of contended keys.
	contendedSlots = 1024
	// setterRest is how long a node whose command failed where its script
	// answered (a Redis before 7.0, an ACL without SET) is sent the script
	// only.
	setterRest = time.Minute
)

// newPlainAcquire returns the plain acquire for nodes, or nil when no node
// implements driver.Setter.
func newPlainAcquire(nodes []*node) *plainAcquire {
	if !slices.ContainsFunc(nodes, func(n *node) bool { return n.setter != nil }) {
		return nil
	}
	p := &plainAcquire{seed: maphash.MakeSeed(), born: time.Now()}
	p.contendFor.Store(int64(contendedFor))
	return p
}

// now returns the monotonic time since p was made.
func (p *plainAcquire) now() int64 { return int64(time.Since(p.born)) }

// slot returns the entry of the table of contended keys for key.
func (p *plainAcquire) slot(key string) *atomic.Int64 {
	return &p.contended[maphash.String(p.seed, key)%contendedSlots]
}

// usable reports whether an attempt of cfg on rkeys, by the waiter w (nil
// for none), may send the command: see [plainAcquire]. A nil p, a manager
// none of whose nodes can, never may. (WithReplicaAck is the manager's
// option only: cfg has the manager's.)
func (p *plainAcquire) usable(cfg *config, rkeys []string, w *waiter) bool {
	return p != nil && len(rkeys) == 1 && !cfg.fencing.on && cfg.fair == nil && (w == nil || !w.placed) && cfg.restartGuard == 0 &&
		cfg.replicaAck == nil && p.slot(rkeys[0]).Load() <= p.now()
}

// contend records that a node refused rkeys: the keys go through the
// script for contendedFor. A nil p does nothing.
func (p *plainAcquire) contend(rkeys []string) {
	if p != nil && len(rkeys) == 1 {
		p.slot(rkeys[0]).Store(p.now() + p.contendFor.Load())
	}
}

// call is n's call, next, with the command in place of the acquire script
// when the request may use it (req.Plain, set per attempt by
// [plainAcquire.usable]) and the node has proven it runs the script and is
// not resting; the first acquire script the node answers proves it. n
// implements driver.Setter.
func (p *plainAcquire) call(n *node, next round.Call) round.Call {
	st := &n.plain
	return func(ctx context.Context, req *round.Request) (any, error) {
		if req.Plain && st.proven.Load() && st.rest.Load() <= p.now() {
			return p.setNX(ctx, n, next, req)
		}
		v, err := next(ctx, req)
		if err == nil && req.Plain && !st.proven.Load() {
			st.proven.Store(true)
		}
		return v, err
	}
}

// setNX runs req, an attempt of the acquire script on one key, as the
// command on n, and answers as the script would: 1 for a grant, 0 for a
// refusal. When the command fails while ctx has not ended, the script is
// run in its place, by run, the node's call; if it answers, the node is
// sent only the script for setterRest.
//
// Invariant: every attempt of a writer that will try again records its
// intent on each node where readers refused it, whichever path it took, so
// a waiting writer keeps new readers out for its TTL from its latest attempt
// (docs/design.md, "Read-write lock"). The command cannot record it: when
// it finds the readers' marker and req carries the intent, the script is
// run on the node within the same attempt, and its answer is the node's
// (it records the intent, or grants the key if the readers left meanwhile).
// The command alone therefore answers only for a free key, the attempt's
// own secret, or a refusal that needs no intent.
func (p *plainAcquire) setNX(ctx context.Context, n *node, run round.Call, req *round.Request) (any, error) {
	secret := req.Args[0]
	v, err := n.setter.SetNXGet(ctx, req.Keys[0], secret, req.Args[1])
	if err == nil {
		switch v := v.(type) {
		case nil:
			return int64(1), nil
		case string:
			switch {
			case v == secret:
				// The attempt's own secret: the command was applied twice
				// (a client's retry), first within the attempt.
				return int64(1), nil
			case v == script.ReadersMark && req.Flag.WriterWaits:
				// Readers hold the key: the script records the intent.
				return run(ctx, req)
			}
			return int64(0), nil
		}
		err = fmt.Errorf("SET NX GET: unexpected reply of type %T", v)
	}
	if ctx.Err() != nil {
		return nil, err
	}
	res, serr := run(ctx, req)
	if serr == nil {
		n.plain.rest.Store(p.now() + int64(setterRest))
	}
	return res, serr
}
