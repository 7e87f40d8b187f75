package dlm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/wake"
)

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
func (m *Manager) attempts(ctx context.Context, cfg *config, wt *claim) (l *Lock, attempt int, err error) {
	var (
		timer *time.Timer
		w     *wake.Watcher // nil until the first refusal
	)
	defer func() { w.Stop() }()
	stopped := func(why error, last *QuorumError) error {
		return &waitError{what: wt.what(), key: keyName(wt.keys), attempts: attempt, why: why, last: last}
	}
	var last *QuorumError // of the last attempt that completed
	for attempt = 1; ; attempt++ {
		w.Drain()
		began := time.Now()
		l, err := m.acquire(ctx, cfg, wt, true)
		took := time.Since(began)
		var qerr *QuorumError
		found := err != nil && errors.As(err, &qerr)
		if found {
			last = qerr
			if wt.line != nil {
				wt.line.refused(qerr)
			}
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
			if w = m.waker.Watch(wt.wake(), wt.waiter()); w != nil {
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
		// A refused attempt after an announced release looks again within
		// a node timeout: the release may not have reached a majority yet.
		last := wake.Attempt{Took: took, Own: qerr.ownGrants, Settle: cfg.timeout()}
		if err := w.Wait(ctx, m.done, timer, last); err != nil {
			if errors.Is(err, wake.ErrDone) {
				err = ErrClosed
			}
			return nil, attempt, stopped(err, qerr)
		}
	}
}
