package dlm

import (
	"context"
	"fmt"
	"time"
)

// Handle returns what [Manager.Resume] needs to take the lock over in
// another process. Until is wall-clock time there, so the two machines'
// clocks must agree to well within the validity; the receiver should act as
// if the validity ended earlier by their possible skew.
//
// Until is computed as the wall clock's now plus the validity left by the
// monotonic clock, so a step of the wall clock since the lock was obtained
// cannot overstate it. Once the lock is unlocked or known lost, Until is
// in the past and Resume refuses the Handle with an error wrapping
// [ErrLockLost].
//
// A nil Lock's Handle is the zero Handle, which Resume refuses with an
// error wrapping [ErrInvalid].
func (l *Lock) Handle() Handle {
	if l == nil {
		return Handle{}
	}
	l.mu.Lock()
	until := l.validUntil()
	ended := l.released || l.lostErr != nil
	l.mu.Unlock()
	if ended {
		until = minTime(until, time.Now())
	}
	// The wall clock first, then the monotonic one: a pause between the
	// two reads can only make Until earlier, never later.
	wall := l.m.wallNow().Round(0)
	left := time.Until(until)
	if left <= 0 {
		left = min(left, -time.Millisecond) // in the past, whatever the rounding
	}
	h := Handle{Keys: l.Keys(), Secret: l.secret, Until: wall.Add(left), TTL: l.cfg.ttl, Token: l.token}
	h.Lease, h.Limit, h.Quorum = l.kind.handle()
	return h
}

// Resume returns a Lock for a lock obtained elsewhere, from its [Handle],
// with the options of this manager and opts: the key prefix and the TTL
// must be the original's, and a fenced lock resumes with [WithFencing].
// [WithAutoExtend] starts extension here, which lives as it does for
// [Manager.Lock]: ctx bounds only the call. The process that handed the
// lock over should neither extend nor unlock it any more.
//
// A Handle from another process is untrusted input, checked before anything
// in it is believed:
//
//   - its secret must have the shape of the secrets this package makes (22
//     characters of URL-safe base64, 128 bits) and never be a reserved
//     value such as the public marker of a key held by readers; otherwise
//     the error wraps [ErrInvalid] (the nodes' scripts never take a
//     reserved value for a holder's secret either);
//   - its Until must be set (otherwise [ErrInvalid]) and in the future
//     (otherwise [ErrLockLost]);
//   - its TTL, when set, must be this call's (otherwise [ErrInvalid]): the
//     lock's validity, its extensions and the TTL its keys live by on the
//     nodes all follow it. A Handle without a TTL (from v0.1.0) resumes
//     with this call's;
//   - its Lease, Limit and Quorum must describe a lease this manager can
//     resume (otherwise [ErrInvalid]);
//   - its fencing token must be the one the nodes hold for the grant (see
//     below).
//
// A Handle without a fencing token (Token 0: a lock taken without
// [WithFencing], a read lock, a permit) resumes without a round trip, with
// token 0 and grant id 0, whether this call has WithFencing or not; Extend
// the lock to confirm it is still held. A Handle with a token makes one
// round trip, under ctx: every node is asked, in one script, whether the
// lock's keys still hold its secret and what their fencing counters are.
// The Handle resumes only if a quorum of nodes hold the keys and the
// largest counter that a quorum of them hold at least is the Handle's
// token. The error wraps [ErrInvalid] when the token differs, is 2^53 or
// more, comes with a lease, or this call is without WithFencing; it is a
// [*QuorumError] matching [ErrLockLost] when too few nodes hold the keys,
// or [ErrUnavailable] when too many nodes failed to tell (with ctx.Err()
// when ctx ended first).
//
// Invariant: a resumed token never exceeds what the counters of a quorum of
// nodes hold while the lock's keys hold its secret; so every later grant of
// the keys, whose quorum shares a node with that one, gets a greater token,
// and a Handle cannot make a [Fence] refuse the grants that follow it.
//
// The resumed lock's validity ends at h.Until or at now plus the validity
// of this TTL (the TTL less the drift allowance, as for a lock obtained
// now), whichever comes first. No key lives longer than the TTL its last
// extension gave it, so a Handle can never make a lock outlive its keys:
// with [WithAutoExtend], extension starts within a TTL, and a lock whose
// keys are gone is reported lost by then. A lock extended beyond the TTL
// (Extend with a longer duration) therefore resumes with the TTL's
// validity only; Extend the resumed lock to have more.
func (m *Manager) Resume(ctx context.Context, h Handle, opts ...Option) (*Lock, error) {
	if err := checkSecret(h.Secret); err != nil {
		return nil, err
	}
	if h.Until.IsZero() {
		return nil, fmt.Errorf("%w: handle has no Until", ErrInvalid)
	}
	keys, err := sortedUnique(h.Keys)
	if err != nil {
		return nil, err
	}
	cfg, rkeys, err := m.prepare(ctx, keys, opts)
	if err != nil {
		return nil, err
	}
	key := keyName(keys)
	if err := checkHandleTTL(key, h.TTL, cfg.ttl); err != nil {
		return nil, err
	}
	// Rebase the wall-clock end onto this process' monotonic clock: the
	// monotonic clock first, then the wall clock, so that a pause between
	// the two reads can only make the validity end earlier, never later.
	mono := time.Now()
	left := h.Until.Round(0).Sub(m.wallNow())
	if left <= 0 {
		return nil, fmt.Errorf("dlm: resume %q: validity ended %v ago: %w", key, -left.Round(time.Millisecond), ErrLockLost)
	}
	until := mono.Add(min(left, cfg.validity(cfg.ttl)))
	kind, err := resumeKind(h, len(m.nodes))
	if err != nil {
		return nil, err
	}
	if kind != nil {
		rkeys = kind.keys(rkeys[0])
	}
	token, err := m.rounds.resumeToken(ctx, &cfg, kind, key, rkeys, &h)
	if err != nil {
		return nil, err
	}
	if time.Until(until) <= 0 {
		return nil, fmt.Errorf("dlm: resume %q: validity ended while the nodes were asked: %w", key, ErrLockLost)
	}
	l := &Lock{m: m, cfg: cfg, claim: claim{kind: kind, keys: keys, rkeys: rkeys}, grant: grant{secret: h.Secret, token: token}, validity: validity{until: until}}
	l.autoExtend(ctx)
	return l, nil
}

// checkHandleTTL checks a Handle's TTL, ttl, against the TTL of the call
// that resumes it, want: a Handle without one (0, from v0.1.0) takes the
// call's.
func checkHandleTTL(key string, ttl, want time.Duration) error {
	switch {
	case ttl < 0:
		return fmt.Errorf("%w: resume %q: the Handle's TTL %v is negative", ErrInvalid, key, ttl)
	case ttl != 0 && ttl != want:
		return fmt.Errorf("%w: resume %q: the Handle's TTL is %v, this call's %v: resume with WithTTL(%v)", ErrInvalid, key, ttl, want, ttl)
	}
	return nil
}
