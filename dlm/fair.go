package dlm

import (
	"fmt"
	"time"
)

// Fairness configures the first-come, first-served mode of [WithFairness].
// The zero value uses the defaults.
type Fairness struct {
	// MaxWaiters bounds each lock's line on each node (default
	// [DefaultMaxWaiters]): it has room for that many places. A holder's
	// place, which it keeps until its release takes it out or the place
	// ends, counts toward the bound. A waiter that finds the line full
	// keeps retrying at its backoff without a place until there is room;
	// it cannot jump the line meanwhile.
	MaxWaiters int
	// Expiry is how long a waiter keeps its place without renewing it
	// (default [DefaultPlaceExpiry], or two node timeouts when that is
	// longer). Waiters renew their places at each
	// attempt that does not obtain the lock, and attempt at least every
	// third of Expiry; a waiter that dies loses its place after Expiry,
	// and until then the lock waits for it. A grant writes no line: a
	// holder keeps the place it had, unrenewed, until it releases the lock
	// or the place ends, Expiry after it was last renewed. One that dies
	// without releasing holds the line up until its lock expires or its
	// place ends, whichever is later. It must be at least twice the node
	// timeout.
	Expiry time.Duration
}

// Defaults of [Fairness].
const (
	DefaultMaxWaiters  = 1024
	DefaultPlaceExpiry = 2 * time.Second
)

// WithFairness makes waiting clients take a lock in the order they first
// asked for it, across processes: each node keeps a line of waiters per
// lock, a node grants the lock only to the waiter at the head of its line
// (or to anyone when the line is empty), and the release wakes only that
// waiter. A waiter keeps its place through an attempt that nodes granted but
// that failed all the same (too few grants, or too late), and while it
// holds the lock it obtained, until its release or the place's end (see
// [Fairness.Expiry]). A waiter's place carries its own ticket, the time it
// began to wait, the same on every node, so that every node orders the
// waiters alike.
//
// Fairness costs throughput: a lock goes to the longest waiter, never to
// the client that released it and asks again at once, and a waiter that
// dies holds the line up for up to [Fairness.Expiry]. Every client of a lock
// must use the same mode: a client without fairness ignores the line. In
// this mode a Manager's callers each take their own place on the nodes,
// rather than waiting in line in the Manager, and a lock is never handed
// over within the Manager. [Manager.TryLock] takes no place: it obtains the
// lock only when nobody waits for it.
func WithFairness(f Fairness) Option {
	return optionFunc(func(c *config) { c.fair = &f })
}

func (f *Fairness) validate(nodeTimeout time.Duration) error {
	switch {
	case f.MaxWaiters < 0:
		return fmt.Errorf("%w: Fairness.MaxWaiters %d: want a positive number, or 0 for the default", ErrInvalid, f.MaxWaiters)
	case f.Expiry < 0:
		return fmt.Errorf("%w: Fairness.Expiry %v: want a positive duration, or 0 for the default", ErrInvalid, f.Expiry)
	case f.Expiry > 0 && f.Expiry < 2*nodeTimeout:
		return fmt.Errorf("%w: Fairness.Expiry %v is shorter than two node timeouts (%v)", ErrInvalid, f.Expiry, 2*nodeTimeout)
	}
	return nil
}

func (f *Fairness) maxWaiters() int {
	if f.MaxWaiters == 0 {
		return DefaultMaxWaiters
	}
	return f.MaxWaiters
}

// expiry is the life of a place under the node timeout nodeTimeout:
// Expiry, or by default [DefaultPlaceExpiry], but never below two node
// timeouts, the bound validate holds an Expiry given to.
func (f *Fairness) expiry(nodeTimeout time.Duration) time.Duration {
	if f.Expiry == 0 {
		return max(DefaultPlaceExpiry, 2*nodeTimeout)
	}
	return f.Expiry
}
