package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// waitGate is the context of the call that takes the lock. It ends the wait
// when --wait runs out or a signal comes, but only until the lock is
// obtained: a signal after that is the command's to handle, not the wait's.
// (The lock's extension does not depend on this context: it lasts until the
// lock is released or lost.)
type waitGate struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer // ends the wait; nil without a limit

	mu   sync.Mutex
	held bool // the lock was obtained: stop does nothing any more
}

// newWaitGate returns a gate that stops the wait after wait, unless wait is
// [waitForever] or 0 (a single attempt, which needs no limit).
func newWaitGate(wait time.Duration) *waitGate {
	g := &waitGate{}
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
	if wait > 0 {
		g.timer = time.AfterFunc(wait, func() { g.stop(errWaitExpired) })
	}
	return g
}

// stop ends the wait for cause, unless the lock was obtained.
func (g *waitGate) stop(cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.held {
		g.cancel(cause)
	}
}

// obtained records that the lock was obtained and reports true, or reports
// false if the wait was stopped first: then the command must not run, and
// the lock must be released.
func (g *waitGate) obtained() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx.Err() != nil {
		return false
	}
	g.held = true
	if g.timer != nil {
		g.timer.Stop()
	}
	return true
}

// cause is why the wait was stopped, or nil.
func (g *waitGate) cause() error {
	return context.Cause(g.ctx)
}

// close stops the wait's timer and ends the context. It is called once the
// lock is released.
func (g *waitGate) close() {
	if g.timer != nil {
		g.timer.Stop()
	}
	g.cancel(context.Canceled)
}

// attempts is a [dlm.Hook] that keeps the outcome of the last attempt to
// take the lock. When --wait runs out, the error says only that the wait
// ended; the last attempt says whether another holder or the nodes were in
// the way.
type attempts struct {
	mu   sync.Mutex
	last error // nil before the first attempt that ran to its end
}

// OnEvent records an attempt that ended on its own, not because the wait
// was stopped under it.
func (a *attempts) OnEvent(ctx context.Context, e *dlm.Event) {
	if e.Kind != dlm.EventAttempt || e.Err == nil || ctx.Err() != nil {
		return
	}
	a.mu.Lock()
	a.last = e.Err
	a.mu.Unlock()
}

// lastErr returns the failure of the last attempt that ran to its end.
func (a *attempts) lastErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// acquire takes the lock, waiting as --wait says, with auto-extension on.
// Signals received meanwhile stop the wait. On failure it logs why and
// returns a nil lock and the exit code.
func (r *runner) acquire(m *dlm.Manager, gate *waitGate, sigs <-chan os.Signal) (*dlm.Lock, int) {
	att := &attempts{}
	opts := []dlm.Option{dlm.WithAutoExtend(dlm.AutoExtend{}), dlm.WithHook(att)}
	if r.cfg.fencing {
		opts = append(opts, dlm.WithFencing())
	}
	if r.cfg.fair {
		opts = append(opts, dlm.WithFairness(dlm.Fairness{}))
	}
	if r.cfg.owner != "" {
		opts = append(opts, dlm.WithOwner(r.cfg.owner))
	}
	type result struct {
		l   *dlm.Lock
		err error
	}
	res := make(chan result, 1)
	start := time.Now()
	go func() {
		l, err := r.take(gate.ctx, m, opts)
		res <- result{l, err}
	}()
	stopLine := func() {}
	// The waiting line shows the mutex's holder; readers and permits have
	// none of their own.
	if r.cfg.wait != 0 && !r.cfg.quiet && !r.cfg.shared && r.cfg.limit == 0 && isTerminal(os.Stderr) {
		stopLine = startWaitLine(r.con, m, r.key, start)
	}
	for {
		select {
		case sig := <-sigs:
			gate.stop(signalCause{sig})
		case res := <-res:
			stopLine()
			waited := slog.Duration("waited", time.Since(start).Round(time.Millisecond))
			if res.err == nil {
				if gate.obtained() {
					r.log.Info("redlock: lock obtained", slog.String("key", r.key), waited)
					return res.l, exitOK
				}
				// Stopped just as the lock was obtained: its extension
				// ended with the context.
				if err := res.l.Unlock(context.Background()); err != nil {
					r.log.Warn("redlock: cannot release the lock", slog.String("key", r.key), slog.Any("error", r.pw.scrub(err)))
				}
				res.err = gate.cause()
			}
			cause, last := gate.cause(), att.lastErr()
			r.logNotObtained(res.err, cause, last, waited)
			return nil, acquireExitCode(res.err, cause, last, r.cfg.conflictCode)
		}
	}
}

// take takes what --shared and --limit ask for — a read lock, a
// semaphore's permit, or by default the mutex (the write lock) — waiting or
// not as --wait says.
func (r *runner) take(ctx context.Context, m *dlm.Manager, opts []dlm.Option) (*dlm.Lock, error) {
	wait := r.cfg.wait != 0
	switch {
	case r.cfg.shared && wait:
		return m.RLock(ctx, r.key, opts...)
	case r.cfg.shared:
		return m.TryRLock(ctx, r.key, opts...)
	case r.cfg.limit > 0:
		s, err := m.Semaphore(r.key, r.cfg.limit)
		if err != nil {
			return nil, err
		}
		if wait {
			return s.Acquire(ctx, opts...)
		}
		return s.TryAcquire(ctx, opts...)
	case wait:
		return m.Lock(ctx, r.key, opts...)
	}
	return m.TryLock(ctx, r.key, opts...)
}

// logNotObtained says why the lock was not obtained.
func (r *runner) logNotObtained(err, cause, last error, waited slog.Attr) {
	key := slog.String("key", r.key)
	errAttr := slog.Any("error", r.pw.scrub(err))
	switch classifyAcquire(err, cause, last) {
	case failSignal:
		var sc signalCause
		errors.As(cause, &sc)
		r.log.Warn("redlock: stopped waiting for the lock", key, slog.String("signal", signalName(sc.sig)), waited)
	case failConfig:
		if !errors.Is(err, dlm.ErrPermission) {
			errAttr = slog.Any("error", r.pw.scrub(last))
		}
		r.log.Error("redlock: a node refused access: check the password and the ACL rules", key, errAttr)
	case failMisconfigured:
		r.log.Error("redlock: a node is misconfigured: check the node URLs", key, errAttr)
	case failInvalid:
		r.log.Error("redlock: invalid lock request", key, errAttr)
	case failUnavailable:
		if errors.Is(cause, errWaitExpired) {
			errAttr = slog.Any("error", r.pw.scrub(last))
		}
		r.log.Error("redlock: too many nodes unavailable for a quorum", key, errAttr, waited)
	case failConflict:
		if errors.Is(cause, errWaitExpired) {
			r.log.Warn("redlock: lock still held elsewhere when --wait ran out", key, waited)
		} else {
			r.log.Warn("redlock: lock held elsewhere", key)
		}
	default:
		r.log.Error("redlock: cannot take the lock", key, errAttr)
	}
}
