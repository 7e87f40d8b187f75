package dlm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// Lock takes the lock named key, waiting until it is obtained, ctx ends,
// the wait bound passes ([WithWaitTimeout]) or the retry budget is spent
// ([WithRetry]; by default none). The caller may act on what the lock
// protects until [Lock.Until], which [Lock.Extend] or [WithAutoExtend]
// moves on, must call [Lock.Unlock] when done, and learns of a loss from
// [Lock.Lost]. [Manager.Do] does all of that around a function;
// [Manager.TryLock] makes one attempt.
//
// The error, checked with errors.Is: [ErrNotObtained] when another holder
// kept the lock, [ErrUnavailable] when too many nodes failed for a quorum,
// [ErrPermission] when nodes refused access (not retried), [ErrOverloaded]
// for an auto-extended lock the Manager cannot keep extended, [ErrInvalid]
// for bad input. When ctx ends (or the wait bound passes) the error wraps
// ctx.Err() too, and keeps the class of the last attempt that completed,
// whose [*QuorumError] errors.As finds; with no attempt completed, ctx.Err()
// alone. [Manager.LockAll], [Manager.Do], [Manager.RLock],
// [Semaphore.Acquire] and [Election.Campaign] end the same way.
//
// Waiting costs the nodes little: calls of one Manager waiting for the same
// key queue in the Manager, only the first sending requests, and may be
// handed the lock without a round trip; the waiters of every process wait
// in the nodes' lines, woken when a release hands them the key, with a
// jittered backoff as the fallback. A retry budget, [WithFairness] and
// TryLock keep a call out of the Manager's queue. docs/design.md
// ("Retrying", "Waking waiters") describes the mechanism and the rules of
// the hand-over.
func (m *Manager) Lock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return m.lock(ctx, []string{key}, opts, true)
}

// TryLock makes one attempt to take the lock named key. It returns an error
// wrapping [ErrNotObtained] when another holder has it.
func (m *Manager) TryLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return m.lock(ctx, []string{key}, opts, false)
}

// lock takes a lock over keys (sorted and distinct), waiting or not, and
// starts its auto-extension when asked to.
func (m *Manager) lock(ctx context.Context, keys []string, opts []Option, wait bool) (*Lock, error) {
	cfg, rkeys, err := m.prepare(ctx, keys, opts)
	if err != nil {
		return nil, err
	}
	if err := refuseUpgrade(ctx, keys); err != nil {
		return nil, err
	}
	return m.take(ctx, &cfg, &claim{keys: keys, rkeys: rkeys}, wait)
}

// take obtains c's lock, waiting or not, sends the lock's event and starts
// its auto-extension when asked to: the part every kind of lock shares once
// its call was checked.
func (m *Manager) take(ctx context.Context, cfg *config, c *claim, wait bool) (*Lock, error) {
	if cfg.owner != nil && (c.kind != nil || len(c.keys) != 1 || cfg.leader != nil) {
		return nil, fmt.Errorf("%w: WithOwner labels locks over one key (Lock, TryLock, Do), not this call's", ErrInvalid)
	}
	start := time.Now()
	var (
		l        *Lock
		err      error
		attempts = 1
	)
	// An auto-extended lock the Manager could not keep extended is
	// refused before any request is sent (admission.go).
	unreserve, err := m.admitAuto(cfg)
	waiting := wait && err == nil // ended by the lock's event, with Waited
	if waiting && cfg.wants(ctx, EventWaiting, nil) {
		cfg.emit(ctx, &Event{Kind: EventWaiting, Op: opLock, Key: keyName(c.keys), Start: start})
	}
	wctx := ctx // the wait's context; ctx goes on with the lock
	if cfg.retry.wait > 0 && wait && err == nil {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, cfg.retry.wait)
		defer cancel()
	}
	switch {
	case err != nil:
		attempts = 0
	case c.kind == nil && wait && cfg.retry.tries == 0 && cfg.fair == nil:
		// Callers that wait without a retry budget queue in the manager
		// first: only the head of the queue sends requests. (With fairness
		// each takes its own place in the nodes' lines instead.) The queue keeps
		// its own copy of the settings, so that those of the other calls
		// need none on the heap.
		lcfg := *cfg
		l, attempts, err = m.lockInLine(wctx, &lcfg, c.keys, c.rkeys)
	case c.kind == nil && wait:
		lcfg := *cfg // as above: lockLoop keeps it
		l, attempts, err = m.lockLoop(wctx, &lcfg, c.keys, c.rkeys, nil)
	case wait:
		l, attempts, err = m.attempts(wctx, cfg, c)
	default:
		l, err = m.acquire(ctx, cfg, c, false) // no waiter: TryLock takes no place in line
	}
	kind := EventObtained
	if err != nil {
		kind = EventNotObtained
	}
	if cfg.wants(ctx, kind, err) {
		ev := &Event{Kind: kind, Op: opLock, Key: keyName(c.keys), Start: start, Duration: time.Since(start), Attempts: attempts, Err: err, Waited: waiting}
		if l != nil {
			ev.Token = l.token
		}
		cfg.emit(ctx, ev)
	}
	if err == nil {
		l.autoExtend(ctx)
	}
	if unreserve != nil {
		unreserve()
	}
	return l, err
}

// lockInLine waits for its turn among the manager's callers for rkeys, then
// takes the lock handed over by the caller before it, or competes for it on
// the nodes with lockLoop.
func (m *Manager) lockInLine(ctx context.Context, cfg *config, keys, rkeys []string) (*Lock, int, error) {
	t, h, err := m.waits.local.enter(ctx, m.life.done, cfg, keyName(keys), rkeys)
	switch {
	case h != nil:
		l := &Lock{m: m, cfg: *cfg, claim: claim{keys: keys, rkeys: rkeys}, grant: h.grant, validity: validity{until: h.until}, obtained: time.Now()}
		t.hold(l, true)
		if err != nil { // handed over as the caller gave up
			l.Unlock(context.WithoutCancel(ctx))
			return nil, 0, err
		}
		return l, 0, nil
	case err != nil:
		return nil, 0, err
	}
	l, attempts, err := m.lockLoop(ctx, cfg, keys, rkeys, t)
	if err != nil {
		t.leave()
	} else {
		t.hold(l, false)
	}
	return l, attempts, err
}

// lockLoop makes attempts at the mutex until one wins (see [Manager.attempts]),
// as a waiter with a place in the nodes' lines when the manager can hear
// the releases that name it, or with fairness. If none is obtained, it gives
// up the place on return; a lock obtained keeps the places it had (the
// acquire script writes no line), and its release takes them out. line is
// the caller's turn at the head of the manager's queue, nil outside it.
func (m *Manager) lockLoop(ctx context.Context, cfg *config, keys, rkeys []string, line *turn) (l *Lock, attempt int, err error) {
	var w *waiter
	if m.waits.waker != nil || cfg.fair != nil {
		w = newWaiter(m.waits.id, m.wallNow())
		defer func() {
			// Nodes that did not grant may keep a place for us, also
			// from replies that came after the outcome was known.
			if l == nil && w.placed {
				m.rounds.leave(ctx, cfg, rkeys, w)
			}
		}()
	}
	return m.attempts(ctx, cfg, &claim{keys: keys, rkeys: rkeys, waiter: w, line: line})
}

// acquireScripts holds the mutex's acquire script for each mix of fencing
// (1) and restart guard (2).
var acquireScripts = [4]*driver.Script{script.Acquire, script.FencedAcquire, script.GuardedAcquire, script.GuardedFencedAcquire}

// acquireRequest builds an attempt's request: the acquire script, keys and
// arguments that fencing and the restart guard call for, and the waiter's
// place in the nodes' lines (w, nil for a call that takes none). KEYS are
// the lock keys, their fencing counters, their lines and the guard key, in
// this order; ARGV the secret, the TTL, the counters' expiry, the guard
// window, the waiter's five arguments and announce's flag. waiting says the
// caller will try again: refused by readers, the attempt records its intent
// there, which keeps new readers out (see [Manager.RLock]); every such
// attempt records it, also one that goes by SET NX (see
// [plainAcquire.setNX]). The attempt is quiet: no node announces its
// grant. An election's new leader is announced by the store of its value
// (storeLeader, [script.SetLeader]), on two of the nodes that granted it.
func acquireRequest(cfg *config, rkeys []string, secret string, w *waiter, waiting bool) *round.Request {
	req := &round.Request{
		Op: opLock, Keys: rkeys, Args: append(make([]string, 0, 10), secret, ttlMillis(cfg.ttl)),
		Want: 1, Timeout: cfg.timeout(), Cap: cfg.timeoutCap(), Early: true,
	}
	mix := 0
	if cfg.fencing.on {
		req.Keys = fencedKeys(rkeys)
		req.Args = append(req.Args, cfg.fencing.expiryArg())
		mix |= 1
	}
	req.Keys = append(req.Keys[:len(req.Keys):len(req.Keys)], script.LinesOf(rkeys)...)
	if cfg.restartGuard > 0 {
		req.Keys = append(req.Keys, script.GuardKey(rkeys[0]))
		req.Args = append(req.Args, ttlMillis(cfg.restartGuard))
		mix |= 2
	}
	req.Args = waiterArgs(req.Args, cfg, w)
	req.Announce(script.Flag{WriterWaits: waiting}, 0)
	req.Script = acquireScripts[mix]
	return req
}

// keyName is how a lock's keys appear in errors and logs.
func keyName(keys []string) string {
	if len(keys) == 1 {
		return keys[0]
	}
	return strings.Join(keys, ",")
}
