package dlm

import (
	"fmt"
	"time"
)

// WithFenceExpiry gives fencing counters ([WithFencing]) a lifetime: each
// grant of a key sets its counter on every granting node to expire after d,
// so a key no longer locked stops costing memory d after its last grant.
// Without it (or with d 0) counters never expire, which keeps one counter
// per key ever locked, forever: right for a fixed set of locks, unbounded
// for per-entity locks (an order id, a user id).
//
// A counter that expired starts again from its node's clock, in
// microseconds, instead of 0: the next token is still greater than every
// earlier one as long as the nodes' clocks disagree by less than d and do
// not step back by more than that (and a key is granted less than a
// million times a second). Should that fail, a token below one the resource
// has seen is rejected by [Fence] — writes refused, never a stale write
// admitted. Tokens stay below 2^53 until the year 2255. d must be at least
// the TTL, so that a counter outlives the grant that set it; pick it longer
// than the longest a resource may go between writes of one key
// (docs/fencing.md). It applies to calls with fencing only.
func WithFenceExpiry(d time.Duration) Option {
	return optionFunc(func(c *config) { c.fencing.expiry = d })
}

// validate checks the counters' expiry against ttl, the TTL of the same
// options.
func (f *fencing) validate(ttl time.Duration) error {
	switch {
	case f.expiry < 0:
		return fmt.Errorf("%w: fence expiry %v: want a positive duration, or 0 for counters that never expire", ErrInvalid, f.expiry)
	case f.expiry > 0 && f.expiry < ttl:
		return fmt.Errorf("%w: fence expiry %v is shorter than the TTL %v", ErrInvalid, f.expiry, ttl)
	}
	return nil
}

// expiryArg is the fenced acquire scripts' ARGV[3].
func (f *fencing) expiryArg() string {
	if f.expiry <= 0 {
		return "0"
	}
	return ttlMillis(f.expiry)
}
