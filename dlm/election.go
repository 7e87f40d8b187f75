package dlm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// MaxLeaderValueLen is the longest value a candidate may campaign with, in
// bytes. The value travels with every extension of the leadership, so it is
// meant for an address or a name, not a payload.
const MaxLeaderValueLen = 4096

// electionPrefix follows the key prefix in an election's keys, so that an
// election and a lock of the same name are different keys.
const electionPrefix = "election:"

// An election is a lock taken with fencing, whose key holds the leader's
// random secret like any lock's; the leader's value is data beside it, in
// the election's leader key (script.SetLeader), tied to that secret by its
// digest and extended with it (script.BatchLeader), so the value lives as
// long as the leadership on each node and no longer than a TTL after it.
// Observers read both with script.Leader, which never reveals the secret.
// The fencing token is the leader's term, and a fenced lock is never handed
// over under its secret to the manager's next waiting caller, who would
// otherwise lead under the previous leader's value.

// Election is one election, as etcd's concurrency.Election: candidates
// [Election.Campaign] to lead it, a leader gives it up with
// [Leadership.Resign], and anyone reads its leader with [Election.Leader]
// or follows it with [Election.Observe]. Make one with [Manager.Election];
// it is safe for concurrent use, and as many candidates and observers as
// wanted may share it.
type Election struct {
	m    *Manager
	name string
	rkey string
	cfg  config
	// opts are the options of the election's lock: the election's own,
	// then the key prefix, fencing, auto-extension and the mark of an
	// election's lock (each campaign adds its value).
	opts []Option
	// ignored counts the answers to reads of the election that no
	// candidate can have written (observe.go).
	ignored atomic.Uint64
}

// Election returns the election called name. The options are those of
// [Manager.Lock] that apply to a leadership, given once for every
// campaign, read and observation of this Election: the TTL, the drift
// factor, the node timeout, the tries and backoff of a campaign, the key
// prefix, the logger and hook, the restart guard, fairness, fence expiry,
// and [WithAutoExtend] for how the leadership is kept (its defaults
// otherwise). The election's keys are the key prefix, "election:" and name,
// so an election and a lock of the same name are different keys.
//
// Election makes no round trip; it returns an error wrapping [ErrInvalid]
// for a name or an option a lock would refuse, and [ErrClosed] after
// [Manager.Close].
func (m *Manager) Election(name string, opts ...Option) (*Election, error) {
	cfg, err := m.cfg.with(opts)
	if err != nil {
		return nil, err
	}
	ext := AutoExtend{}
	if cfg.autoExtend != nil {
		ext = *cfg.autoExtend
	}
	lopts := append(slices.Clip(opts), WithKeyPrefix(cfg.prefix+electionPrefix), WithFencing(), WithAutoExtend(ext),
		optionFunc(func(c *config) { c.leader = new(string) }))
	cfg, rkeys, err := m.prepare(context.Background(), []string{name}, lopts)
	if err != nil {
		return nil, fmt.Errorf("dlm: election %q: %w", name, err)
	}
	return &Election{m: m, name: name, rkey: rkeys[0], cfg: cfg, opts: lopts}, nil
}

// Name returns the election's name, as given to [Manager.Election].
func (e *Election) Name() string { return e.name }

// Leadership is a won election, returned by [Election.Campaign]. It lasts
// until [Leadership.Resign], its loss, or [Manager.Close] — not the context
// given to Campaign: it is kept by auto-extension under a context of its
// own. Its methods are safe for concurrent use.
//
// A nil *Leadership, which a failed Campaign returns, never panics: Resign
// returns an error wrapping [ErrNotHeld], Lost a closed channel, and the
// accessors zero values.
type Leadership struct {
	l     *Lock
	name  string
	value string
	// end cancels the context the leadership was won under, once the
	// leadership is over.
	end context.CancelFunc
}

// Campaign waits until this caller leads the election, then returns its
// [Leadership]. While it leads, [Election.Leader] and [Election.Observe]
// report value to everyone reading the election. At most one candidate
// leads at a time, with the same guarantee as a lock: it is a lock taken
// with [WithFencing], whose fencing token is the leader's term
// ([Leadership.Term]), and kept by auto-extension until Resign, its loss,
// [AutoExtend.MaxHold] or [Manager.Close]. A leader acts as leader only
// while [Leadership.Lost] is open, and before [Leadership.Until].
//
// A candidate leads once a quorum of the nodes granted it the election's
// lock and then stored its value beside the lock, within the attempt's
// validity: an attempt whose value too few nodes stored fails, is released,
// and the candidate tries again as it would behind another leader. An
// attempt waits for every node's answer, each within the node timeout, and
// stores the value on every node that granted it, so that readers, who
// trust a value only where a quorum holds it, still find it with one of
// those nodes down; a node that does not answer costs each attempt a node
// timeout.
//
// ctx bounds the wait only: once Campaign has returned, ending ctx changes
// nothing. When ctx ends first, the error wraps ctx.Err(), and a lock won at
// that very moment is released; as with [Manager.Lock], it also keeps the
// class of the last attempt that completed ([ErrNotObtained] while another
// candidate leads, [ErrUnavailable]) and its [*QuorumError]. value is at
// most [MaxLeaderValueLen] bytes.
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	if len(value) > MaxLeaderValueLen {
		return nil, fmt.Errorf("%w: leader value of %d bytes: at most %d allowed", ErrInvalid, len(value), MaxLeaderValueLen)
	}
	// The lock is taken, and then extended, under lctx: ctx ends it while
	// Campaign waits, and only the leadership's end afterwards.
	lctx, end := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, end)
	l, err := e.m.lock(lctx, []string{e.name}, append(slices.Clip(e.opts), optionFunc(func(c *config) { c.leader = &value })), true)
	if !unhook() {
		end()
		if l != nil {
			l.Unlock(context.WithoutCancel(ctx))
		}
		// The wait ended with lctx, for ctx's reason: say ctx's, and
		// keep the last attempt's outcome.
		var we *waitError
		if errors.As(err, &we) {
			stopped := *we
			stopped.why = ctx.Err()
			return nil, fmt.Errorf("dlm: campaign %q: %w", e.name, &stopped)
		}
		return nil, fmt.Errorf("dlm: campaign %q: %w", e.name, ctx.Err())
	}
	if err != nil {
		end()
		return nil, fmt.Errorf("dlm: campaign %q: %w", e.name, err)
	}
	ld := &Leadership{l: l, name: e.name, value: value, end: end}
	// The leadership's context ends with it: no goroutine per leadership
	// waits for that, the lock's end cancels it.
	l.mu.Lock()
	if l.ended() {
		end()
	} else {
		l.onEnd = append(l.onEnd, func(error) { end() })
	}
	l.mu.Unlock()
	return ld, nil
}

// storeLeader stores value, the candidate's, beside the election's lock
// key rkey on the nodes that granted the attempt whose secret it is (all
// that answered within the node timeout: see [claim.request]), each
// within the node timeout ([script.SetLeader]), and returns how many hold
// it; two of the granting nodes announce the new leader to the observers.
// It is part of the attempt, as the fencing token is: the attempt counts
// only the nodes that stored the value, and one that too few stored in
// time fails and is released as any failed attempt is. Those nodes answered
// the acquire already, so the value never reaches a node before its grant.
func (q *quorumRounds) storeLeader(ctx context.Context, cfg *config, rkey, secret, value string, granted uint64) int {
	only := make([]bool, len(q.nodes))
	for i := range only {
		only[i] = i < 64 && granted&(1<<i) != 0
	}
	req := &round.Request{
		Op: opLeader, Script: script.SetLeader, Keys: []string{rkey, script.LeaderKey(rkey)},
		Args: append(make([]string, 0, 3), secret, value), Want: 1, Timeout: cfg.timeout(), Cap: cfg.timeoutCap(), Only: only,
	}
	req.Announce(script.Flag{Mode: script.Loud}, wake.Announcers(granted))
	v, _ := q.Poll(ctx, req)
	return v.Yes
}

// Name returns the election's name, as given to [Manager.Election].
func (ld *Leadership) Name() string {
	if ld == nil {
		return ""
	}
	return ld.name
}

// Value returns the value the leader campaigned with: what
// [Election.Leader] reports while it leads.
func (ld *Leadership) Value() string {
	if ld == nil {
		return ""
	}
	return ld.value
}

// Term returns the leadership's fencing token: every leadership of the
// election has a greater one than all before it (see [WithFencing]).
// Resources that the leader writes can refuse a deposed leader with [Fence].
func (ld *Leadership) Term() uint64 { return ld.lock().Token() }

// GrantID tells this term's grant apart from another grant that was given
// the same term after fencing counters were lost; see [Lock.GrantID] and
// [Fence.Admit].
func (ld *Leadership) GrantID() uint64 { return ld.lock().GrantID() }

// Until returns the end of the leadership's current validity by the local
// monotonic clock; extension moves it on.
func (ld *Leadership) Until() time.Time { return ld.lock().Until() }

// Lost returns a channel that is closed when the leadership ends: resigned,
// or lost as [Lock.Lost] tells — a guard interval before its validity ends
// without a successful extension, which is also what follows
// [Manager.Close].
func (ld *Leadership) Lost() <-chan struct{} { return ld.lock().Lost() }

// lock returns the leadership's lock, nil for a nil Leadership.
func (ld *Leadership) lock() *Lock {
	if ld == nil {
		return nil
	}
	return ld.l
}

// Resign gives the leadership up: it stops the extension and releases the
// election on every node, which observers hear at once. It runs even if
// ctx is already done, each node bounded by the node timeout. It returns an
// error wrapping [ErrLockLost] when the leadership had been lost before,
// and one wrapping [ErrNotHeld] on a second call or a nil Leadership.
func (ld *Leadership) Resign(ctx context.Context) error {
	if ld == nil {
		return fmt.Errorf("dlm: resign: nil *Leadership (not won): %w", ErrNotHeld)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	err := ld.l.Unlock(ctx)
	ld.end()
	if err != nil {
		return fmt.Errorf("dlm: resign %q: %w", ld.name, err)
	}
	return nil
}
