package dlm

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// A leaseKind is a lock that several holders may share, each with a lease of
// its own (a secret with a TTL in a sorted set on each node): the read lock
// and the semaphore's permits. A [Lock] of a kind is extended, released and
// lost as the mutex is; only its scripts and its quorum differ.
type leaseKind struct {
	what           string // in errors: "read lock", "permit"
	suffix         string // of the lease set's key
	acquire        [2]*driver.Script
	extend, unlock *driver.Script
	intent         bool // a read lock: its acquire also reads the writer's intent
	limit          int  // a semaphore's limit, 0 for none
	need           int  // the quorum; 0 for a majority
}

// readLease is the read lock's kind.
var readLease = &leaseKind{
	what: "read lock", suffix: script.ReadersSuffix, intent: true,
	acquire: [2]*driver.Script{script.ReadAcquire, script.GuardedReadAcquire},
	extend:  script.ReadExtend, unlock: script.ReadRelease,
}

// keys returns a lease's keys for the lock key rkey: the lock key and the
// readers' set for a read lock, the set of permits for a semaphore.
func (k *leaseKind) keys(rkey string) []string {
	if k.intent {
		return []string{rkey, rkey + k.suffix}
	}
	return []string{rkey + k.suffix}
}

// quorum is the number of nodes a lease needs among n.
func (k *leaseKind) quorum(n int) int {
	if k.need > 0 {
		return k.need
	}
	return round.Majority(n)
}

// acquireRequest builds an attempt's request. KEYS are the lease's keys,
// the writer's intent (read lock) and the restart guard's key; ARGV the
// secret, the TTL, the guard's window, the limit (semaphore) and announce's
// flag, which is off: taking a lease announces nothing.
func (k *leaseKind) acquireRequest(cfg *config, lkeys []string, secret string) *round.Request {
	req := &round.Request{
		Op: opLock, Keys: lkeys, Args: append(make([]string, 0, 5), secret, ttlMillis(cfg.ttl)),
		Want: 1, Timeout: cfg.timeout(), Cap: cfg.timeoutCap(), Early: true, Need: k.need,
	}
	if k.intent {
		req.Keys = append(lkeys[:len(lkeys):len(lkeys)], script.IntentKey(lkeys[0]))
	}
	req.Script = k.acquire[0]
	if cfg.restartGuard > 0 {
		req.Keys = append(req.Keys[:len(req.Keys):len(req.Keys)], script.GuardKey(lkeys[0]))
		req.Args = append(req.Args, ttlMillis(cfg.restartGuard))
		req.Script = k.acquire[1]
	}
	if k.limit > 0 {
		req.Args = append(req.Args, strconv.Itoa(k.limit))
	}
	req.Announce(script.Flag{}, 0) // grants of a lease are not announced
	return req
}

// releaseRequest gives a lease back on every node. The release of a lease
// obtained (real) is announced by every node: a read lock's last reader
// hands the key on to the writer at the head of its line, and otherwise a
// release is broadcast to the waiters of the lease. A failed attempt's
// release announces nothing: it would wake its own caller (see
// [claim.releaseRequest]).
func (k *leaseKind) releaseRequest(cfg *config, lkeys []string, secret string, real bool) *round.Request {
	req := &round.Request{
		Op: opUnlock, Script: k.unlock, Keys: lkeys, Args: append(make([]string, 0, 3), secret),
		Want: 1, Timeout: cfg.timeout(), Cap: cfg.timeoutCap(), Need: k.need,
	}
	if k.intent {
		req.Keys = append(lkeys[:len(lkeys):len(lkeys)], script.LineKeys(lkeys[0])...)
		req.Args = append(req.Args, ttlMillis(cfg.reservation()))
	}
	if real {
		req.Announce(loudFlag, allNodes)
	} else {
		req.Announce(script.Flag{}, 0)
	}
	return req
}

// release releases l on every node, by the scripts of its kind, and
// returns the vote and the request.
func (l *Lock) release(ctx context.Context) (round.Vote, *round.Request) {
	if l.kind == nil {
		return l.m.rounds.release(ctx, &l.cfg, l.rkeys, l.secret, l.waiterID)
	}
	req := l.kind.releaseRequest(&l.cfg, l.rkeys, l.secret, true)
	v, _ := l.m.rounds.Poll(context.WithoutCancel(ctx), req)
	return v, req
}

// extendRequest sets l's TTL to ttl on the nodes that still hold it.
func (l *Lock) extendRequest(cfg *config, ttl time.Duration) *round.Request {
	req := &round.Request{
		Op: opExtend, Script: script.Extend, Keys: l.rkeys, Args: []string{l.secret, ttlMillis(ttl)},
		Want: 1, Timeout: cfg.timeout(), Early: true,
	}
	if l.kind != nil {
		req.Script, req.Need = l.kind.extend, l.kind.need
	}
	return req
}

// quorum is the number of nodes that must hold l.
func (l *Lock) quorum() int {
	return l.claim.quorum(len(l.m.nodes))
}

// failure is the error of an operation on l whose vote fell short.
func (l *Lock) failure(v *round.Vote, op string, expired bool) *QuorumError {
	return l.claim.failure(v, op, len(l.m.nodes), l.quorum(), expired)
}

// subject names l in errors: its key, quoted, after the kind of lock for a
// read lock or a permit (permit "encoders"), so that every error of a
// permit calls it a permit.
func (l *Lock) subject() string {
	if l.kind != nil {
		return l.kind.what + " " + strconv.Quote(l.Key())
	}
	return strconv.Quote(l.Key())
}

// lockLease takes a lease of kind on key, waiting or not, and starts its
// auto-extension when asked to. Fencing and fairness do not apply to
// leases; the restart guard does.
func (m *Manager) lockLease(ctx context.Context, kind *leaseKind, key string, opts []Option, wait bool) (*Lock, error) {
	cfg, rkeys, err := m.prepare(ctx, []string{key}, opts)
	if err != nil {
		return nil, err
	}
	if kind.intent {
		if err := refuseDowngrade(ctx, key); err != nil {
			return nil, err
		}
	}
	if kind.need > len(m.nodes) {
		return nil, fmt.Errorf("%w: a %s needs %d nodes; the manager has %d", ErrInvalid, kind.what, kind.need, len(m.nodes))
	}
	return m.take(ctx, &cfg, &claim{kind: kind, keys: []string{key}, rkeys: kind.keys(rkeys[0])}, wait)
}

// handle returns what a [Handle] says of a lease of kind k (nil for the
// mutex).
func (k *leaseKind) handle() (lease string, limit, q int) {
	switch {
	case k == nil:
		return "", 0, 0
	case k.intent:
		return "read", 0, 0
	}
	return "permit", k.limit, k.need
}

// resumeKind returns the lease kind h describes, nil for the mutex, to be
// resumed by a manager of the given number of nodes.
func resumeKind(h Handle, nodes int) (*leaseKind, error) {
	switch h.Lease {
	case "":
		return nil, nil
	case "read":
		if len(h.Keys) != 1 {
			return nil, fmt.Errorf("%w: Handle of a read lock over %d keys; want 1", ErrInvalid, len(h.Keys))
		}
		return readLease, nil
	case "permit":
		if len(h.Keys) != 1 || h.Limit < 1 || h.Limit > MaxPermits {
			return nil, fmt.Errorf("%w: Handle of a permit: %d keys, limit %d; want 1 key and a limit from 1 to %d", ErrInvalid, len(h.Keys), h.Limit, MaxPermits)
		}
		q, err := permitQuorum(nodes, h.Limit, h.Quorum)
		if err != nil {
			return nil, err
		}
		return permitKind(h.Limit, q), nil
	}
	return nil, fmt.Errorf("%w: Handle of an unknown lease %q", ErrInvalid, h.Lease)
}
