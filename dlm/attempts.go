package dlm

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// waiting is what a call that waits for a lock of any kind — the mutex,
// a read lock, a permit — hands [Manager.attempts]: how to make one
// attempt, and where the releases that wake it are announced.
type waiting struct {
	what    string // in errors: opLock for the mutex, the kind of lease otherwise
	key     string // the lock's name in errors (see keyName)
	wake    []string
	fw      *fairWaiter // with fairness: the place in line, which the pause renews in time
	attempt func(ctx context.Context) (*Lock, error)
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
		w     *watcher
		wake  <-chan struct{} // nil, which blocks, until w exists
	)
	defer func() {
		if w != nil {
			w.stop()
		}
	}()
	id := ""
	if wt.fw != nil {
		id = wt.fw.id
	}
	stopped := func(why error, last *QuorumError) error {
		return &waitError{what: wt.what, key: wt.key, attempts: attempt, why: why, last: last}
	}
	var last *QuorumError // of the last attempt that completed
	for attempt = 1; ; attempt++ {
		if w != nil {
			w.drain()
		}
		began := time.Now()
		l, err := wt.attempt(ctx)
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
			if w = m.waker.watch(wt.wake, id); w != nil {
				wake = w.c
				// A release announced before the subscription was made
				// went unheard: try again at once.
				if w.await(ctx, cfg.timeout()); ctx.Err() != nil {
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
		if err := m.awaitTurn(ctx, timer, w, wake, took); err != nil {
			return nil, attempt, stopped(err, qerr)
		}
	}
}
