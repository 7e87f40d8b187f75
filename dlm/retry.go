package dlm

import (
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

// jitter draws a wait uniformly from [d/2, d].
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return max(d, 0)
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
