package dlm

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// A Backoff returns the longest wait before retry n (n counts from 1, after
// the first failed attempt). [Manager.Lock] waits a random time between half
// of it and all of it, so competing clients do not split the vote forever.
type Backoff func(n int) time.Duration

// FixedBackoff waits up to d before every retry.
func FixedBackoff(d time.Duration) Backoff {
	return func(int) time.Duration { return d }
}

// LinearBackoff waits up to n×step before retry n, never more than maxDelay.
func LinearBackoff(step, maxDelay time.Duration) Backoff {
	return func(n int) time.Duration {
		if n <= 0 {
			n = 1
		}
		if step > 0 && time.Duration(n) > maxDelay/step {
			return maxDelay
		}
		return time.Duration(n) * step
	}
}

// ExponentialBackoff waits up to base×2^(n-1) before retry n, never more than
// maxDelay.
func ExponentialBackoff(base, maxDelay time.Duration) Backoff {
	return func(n int) time.Duration {
		d := base
		for i := 1; i < n && d < maxDelay; i++ {
			if d > maxDelay/2 {
				return maxDelay // doubling would pass it, or overflow
			}
			d *= 2
		}
		return min(d, maxDelay)
	}
}

// retry is how a waiting call retries: [WithRetry]'s, and how long it
// waits: [WithWaitTimeout]'s.
type retry struct {
	tries   int // 0: until the context ends
	backoff Backoff
	wait    time.Duration // 0: until the context ends
}

// WithWaitTimeout bounds the wait for a lock by d, apart from the context:
// a call that waits ([Manager.Lock], [Manager.Do], their multi-key, read
// and semaphore forms) gives up d after it began, as if its context had
// ended then (the error wraps [context.DeadlineExceeded] and, when a
// holder refused the last attempt, [ErrNotObtained]); the context alone
// bounds what follows. So with [Manager.Do], "wait at most 5 s, then run
// as long as it takes" is
//
//	m.Do(ctx, key, fn, dlm.WithWaitTimeout(5*time.Second))
//
// and fn's lock stays extended, its context cancelled on a loss or when
// ctx ends, however long fn runs. d 0 (the default) sets no bound besides
// the context; a negative d is [ErrInvalid]. [Manager.TryLock] makes one
// attempt and ignores it.
func WithWaitTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.retry.wait = d })
}

// WithRetry sets how [Manager.Lock] retries: at most tries attempts in all
// (0 means until the context ends, the default), waiting backoff(n) between
// attempt n and n+1, with jitter: the wait is drawn uniformly from
// [backoff(n)/2, backoff(n)]. A nil backoff keeps the current one. The default
// is [ExponentialBackoff] from 10 ms to 200 ms.
//
// With tries > 0, a Lock call stays out of the Manager's queue of callers
// waiting for the same keys, and out of the hand-over within it: it
// competes on the nodes from its first attempt, is never handed a lock, and
// its lock is released on the nodes at Unlock rather than handed to the
// next queued caller (see [Manager.Lock]). With tries 0 the call waits in
// that queue, and the head of the queue retries at this backoff.
//
// A call refused by a holder, with a place in the nodes' lines, waits
// longer when its Manager hears the releases, which wake it when they hand
// it the lock: the longer of this wait and a sixth to a third of its
// place's life ([Fairness.Expiry] with fairness, otherwise the longer of
// [DefaultPlaceExpiry] and twice the backoff), but never past when the
// refusing holders' keys run out on enough nodes for a quorum unless
// extended, or a node timeout after its attempt if that is later (see
// [Manager.Lock]).
func WithRetry(tries int, backoff Backoff) Option {
	return optionFunc(func(c *config) {
		c.retry.tries = tries
		if backoff != nil {
			c.retry.backoff = backoff
		}
	})
}

// validate refuses a negative number of tries.
func (r *retry) validate() error {
	if r.tries < 0 {
		return fmt.Errorf("%w: retry tries %d: want 0 (until the context ends) or more", ErrInvalid, r.tries)
	}
	if r.wait < 0 {
		return fmt.Errorf("%w: wait timeout %v: want 0 (until the context ends) or more", ErrInvalid, r.wait)
	}
	return nil
}

// gaveUp reports whether a call that made attempt attempts has spent its
// budget.
func (r *retry) gaveUp(attempt int) bool {
	return r.tries > 0 && attempt >= r.tries
}

// jitter draws a wait uniformly from [d/2, d].
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return max(d, 0)
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
