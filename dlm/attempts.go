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
// it listens for the releases on the nodes that can tell (see
// [driver.Subscriber]) and tries again when they say so: the mutex's
// waiter when the releases that hand it the keys name it (see
// [wake.Watcher.Wait]), a lease when any release is announced. The
// jittered backoff remains the pace when no announcement comes, but for a
// waiter with a place in the nodes' lines: refused by a holder while its
// manager hears a quorum of the nodes (the releases name it), it attempts
// every sixth to third of the place's life, which renews it, and with
// fairness at least that often whatever refused it; a refused waiter
// attempts again no later than when the refusing keys run out on enough
// nodes for a quorum (a crashed holder announces nothing), or a node
// timeout after its attempt if that is later (see [waiter.untilTurn]).
// Polling is what a hand-off by name saves: 64 processes waiting at the
// backoff's pace made most of the servers' work.
//
// It stops at the first error that is no [QuorumError] (a lock or nil
// error, ErrClosed, a bad option), when ctx ends (a *waitError that wraps
// ctx's error and the last attempt's QuorumError), after cfg.retry.tries
// attempts, and at a refusal that waiting cannot mend (passwords, ACLs).
func (m *Manager) attempts(ctx context.Context, cfg *config, c *claim) (l *Lock, attempt int, err error) {
	var (
		timer *time.Timer
		w     *wake.Watcher // nil until the first refusal
		woken bool          // a wake-up started this attempt
	)
	defer func() { w.Stop() }()
	stopped := func(why error, last *QuorumError) error {
		return &waitError{what: c.what(), key: keyName(c.keys), attempts: attempt, why: why, last: last}
	}
	var last *QuorumError // of the last attempt that completed
	for attempt = 1; ; attempt++ {
		if c.waiter != nil {
			if woken && c.waiter.released != nil {
				// A request of the last attempt may still hold a key
				// that the release which woke the waiter handed to it:
				// its release frees it first (within two node timeouts).
				select {
				case <-c.waiter.released:
				case <-ctx.Done():
				}
			}
			c.waiter.woken, c.waiter.life = woken, cfg.placeLife(attempt)
		}
		w.Drain()
		began := time.Now()
		l, err := m.acquire(ctx, cfg, c, true)
		took := time.Since(began)
		var qerr *QuorumError
		found := err != nil && errors.As(err, &qerr)
		if found {
			last = qerr
			if c.line != nil {
				c.line.refused(qerr)
			}
		}
		if err != nil && ctx.Err() != nil && (found || errors.Is(err, ctx.Err())) {
			return nil, attempt, stopped(ctx.Err(), last)
		}
		if err == nil || !found {
			return l, attempt, err
		}
		if cfg.retry.gaveUp(attempt) {
			return nil, attempt, fmt.Errorf("dlm: gave up after %d attempts: %w", attempt, err)
		}
		if qerr.misconfigured() {
			// Passwords and ACLs do not fix themselves.
			return nil, attempt, err
		}
		// A waiter listens once refused by another holder, or once it has a
		// place in the nodes' lines, whatever kept its attempt short: a
		// release may hand it the keys, and name it.
		if w == nil && m.waits.waker != nil && (errors.Is(err, ErrNotObtained) || c.waiter != nil && c.waiter.placed) {
			if w = m.waits.waker.Watch(c.wake(), c.waiter.waiterID(), c.quorum(len(m.nodes))); w != nil && !w.ListeningSince(began) {
				// A release announced before the subscription was made
				// went unheard: try again at once. (Channels the manager
				// listened on before this attempt began, as another
				// caller's or a lingering one, missed nothing: a release
				// that named the waiter before Watch counts once it
				// watches.)
				if w.Ready(ctx, cfg.timeout()); ctx.Err() != nil {
					return nil, attempt, stopped(ctx.Err(), qerr)
				}
				woken = false
				continue
			}
		}
		if c.waiter != nil && c.waiter.unnamed {
			// Others wait on the broadcast channels, whose releases may
			// name nobody: hear those too.
			m.waits.waker.Widen(w, c.wake())
		}
		wait := jitter(cfg.retry.backoff(attempt))
		if c.waiter != nil && c.waiter.placed {
			if cfg.maxWait() > 0 {
				wait = min(wait, cfg.maxWait()) // renew the fair place in time
			}
			if qerr.Against > 0 {
				wait = c.waiter.untilTurn(cfg, attempt, wait, w.Hears())
			}
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		last := wake.Attempt{Took: took, Woken: woken, Contended: qerr.For > 0, Grace: cfg.timeout()}
		if woken, err = w.Wait(ctx, m.life.done, timer, last); err != nil {
			if errors.Is(err, wake.ErrDone) {
				err = ErrClosed
			}
			return nil, attempt, stopped(err, qerr)
		}
	}
}
