package dlm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// waiting is a call that waits for a lock of any kind: the mutex, a read
// lock, a permit.
type waiting struct {
	kind  *leaseKind  // nil for the mutex
	keys  []string    // as the caller named them
	rkeys []string    // the keys its requests name: the lock keys, or the lease's
	fw    *fairWaiter // with fairness: the place in line, which the pause renews in time
}

// attempt makes one attempt at wt's lock.
func (m *Manager) attempt(ctx context.Context, cfg *config, wt *waiting) (*Lock, error) {
	if wt.kind == nil {
		return m.acquire(ctx, cfg, wt.keys, wt.rkeys, wt.fw, true)
	}
	return m.acquireLease(ctx, cfg, wt.kind, wt.keys, wt.rkeys)
}

// what names wt's lock in errors: opLock for the mutex, the kind of lease
// otherwise.
func (wt *waiting) what() string {
	if wt.kind == nil {
		return opLock
	}
	return wt.kind.what
}

// wake returns the keys whose releases wake wt: the lock keys, or a
// lease's first key.
func (wt *waiting) wake() []string {
	if wt.kind == nil {
		return wt.rkeys
	}
	return wt.rkeys[:1]
}

// attempts makes attempts until one wins, and returns how many it made.
// After the first attempt refused because another client holds the lock,
// it listens for releases on the nodes that can tell (see
// [driver.Subscriber]) and tries again the moment one is announced; the
// jittered backoff remains the pace when no announcement comes.
//
// It stops at the first error that is no [QuorumError] (a lock or nil
// error, ErrClosed, a bad option), when ctx ends (a *waitError that wraps
// ctx's error and the last attempt's QuorumError), after cfg.tries
// attempts, and at a refusal that waiting cannot mend (passwords, ACLs).
func (m *Manager) attempts(ctx context.Context, cfg *config, wt *waiting) (l *Lock, attempt int, err error) {
	var (
		timer *time.Timer
		w     *wake.Watcher // nil until the first refusal
	)
	defer func() { w.Stop() }()
	id := ""
	if wt.fw != nil {
		id = wt.fw.id
	}
	stopped := func(why error, last *QuorumError) error {
		return &waitError{what: wt.what(), key: keyName(wt.keys), attempts: attempt, why: why, last: last}
	}
	var last *QuorumError // of the last attempt that completed
	for attempt = 1; ; attempt++ {
		w.Drain()
		began := time.Now()
		l, err := m.attempt(ctx, cfg, wt)
		took := time.Since(began)
		var qerr *QuorumError
		found := err != nil && errors.As(err, &qerr)
		if found {
			last = qerr
		}
		if err != nil && ctx.Err() != nil && (found || errors.Is(err, ctx.Err())) {
			return nil, attempt, stopped(ctx.Err(), last)
		}
		if err == nil || !found {
			return l, attempt, err
		}
		if cfg.tries > 0 && attempt >= cfg.tries {
			return nil, attempt, fmt.Errorf("dlm: gave up after %d attempts: %w", attempt, err)
		}
		if qerr.misconfigured() {
			// Passwords and ACLs do not fix themselves.
			return nil, attempt, err
		}
		if w == nil && m.waker != nil && errors.Is(err, ErrNotObtained) {
			if w = m.waker.Watch(wt.wake(), id); w != nil {
				// A release announced before the subscription was made
				// went unheard: try again at once.
				if w.Ready(ctx, cfg.timeout()); ctx.Err() != nil {
					return nil, attempt, stopped(ctx.Err(), qerr)
				}
				continue
			}
		}
		wait := jitter(cfg.backoff(attempt))
		if wt.fw != nil {
			wait = min(wait, wt.fw.maxWait()) // renew the place in time
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		if err := w.Wait(ctx, m.done, timer, took); err != nil {
			if errors.Is(err, wake.ErrDone) {
				err = ErrClosed
			}
			return nil, attempt, stopped(err, qerr)
		}
	}
}
