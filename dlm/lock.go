package dlm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Lock is a held lock. Its methods are safe for concurrent use; Extend and
// Unlock on one Lock are serialized, so an extension never overtakes an
// unlock.
type Lock struct {
	m     *Manager
	cfg   config
	key   string
	keys  []string // Redis keys
	token string
	pend  *pending // acquire requests still due when the lock was obtained

	mu       sync.Mutex
	until    time.Time
	released bool // Unlock was called
	lost     bool // a quorum of nodes no longer holds the token
}

// Key returns the lock's key as given to [Manager.Lock].
func (l *Lock) Key() string { return l.key }

// Until returns the end of the lock's validity by the local monotonic clock.
// The holder may act on the protected resource only before it.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Unlock releases the lock on every node: each node deletes the key only if
// it still holds this lock's token, so a lock that expired and was taken by
// someone else is left alone.
//
// Unlock runs even if ctx is already done, each node bounded by the node
// timeout, since a lock left behind blocks others until its TTL. Called
// right after the lock was obtained, it first lets the acquire requests
// still under way end (within their own node timeout). It returns
// an error wrapping [ErrLockLost] when the validity had ended before Unlock
// or a quorum no longer held the lock, and on a second call.
func (l *Lock) Unlock(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return fmt.Errorf("dlm: unlock %q: already unlocked: %w", l.key, ErrLockLost)
	}
	if l.m.closed.Load() {
		return ErrClosed
	}
	l.released = true
	expiredFor := time.Since(l.until)
	if l.pend != nil {
		// An acquire request still under way could land after the release
		// and leave the key behind until its TTL.
		l.pend.wait()
	}
	v := l.m.release(ctx, &l.cfg, l.keys, l.token, nil)
	v.logFailures(ctx, l.cfg.logger, opUnlock, l.key)
	if v.yes < quorum(len(l.m.nodes)) {
		return v.failure(opUnlock, l.key, len(l.m.nodes), false)
	}
	if expiredFor >= 0 || l.lost {
		return fmt.Errorf("dlm: unlock %q: validity had ended %v before: %w", l.key, expiredFor.Round(time.Millisecond), ErrLockLost)
	}
	return nil
}

// Extend sets the lock's TTL to ttl from now on every node that still holds
// it. It succeeds when a quorum extended within the new validity, which then
// replaces the old one. It never revives a lock: once the local validity has
// ended it returns an error wrapping [ErrLockLost] without a round trip, and
// nodes whose key expired are not written. When the extension fails for
// other reasons (node errors), the old validity still stands.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	cfg := l.cfg
	cfg.ttl = ttl
	if err := cfg.validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.released:
		return fmt.Errorf("dlm: extend %q: already unlocked: %w", l.key, ErrLockLost)
	case l.m.closed.Load():
		return ErrClosed
	case l.lost:
		return fmt.Errorf("dlm: extend %q: %w", l.key, ErrLockLost)
	}
	start := time.Now()
	if !start.Before(l.until) {
		l.lost = true
		return fmt.Errorf("dlm: extend %q: validity ended %v ago: %w", l.key, start.Sub(l.until).Round(time.Millisecond), ErrLockLost)
	}
	n := len(l.m.nodes)
	v, _ := l.m.poll(ctx, &request{
		op: opExtend, script: extendScript, keys: l.keys, args: []string{l.token, ttlMillis(ttl)},
		want: 1, timeout: cfg.timeout(), early: true,
	})
	drift := cfg.drift(ttl)
	if v.yes >= quorum(n) && ttl-time.Since(start)-drift > 0 {
		l.until = start.Add(ttl - drift)
		return nil
	}
	v.logFailures(ctx, l.cfg.logger, opExtend, l.key)
	if v.no > n-quorum(n) {
		l.lost = true // a quorum no longer holds the token
	}
	qerr := v.failure(opExtend, l.key, n, v.yes >= quorum(n))
	if ctx.Err() != nil {
		return fmt.Errorf("dlm: extend %q: %w (%v)", l.key, ctx.Err(), qerr)
	}
	return qerr
}
