package chaos

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// Key prefixes that [SharedLocker] serves as a read-write lock and as a
// semaphore.
const (
	RWPrefix  = "rw-"
	SemPrefix = "sem-"
)

// SharedLocker drives a real [dlm.Manager]'s read-write locks and
// semaphores: a key named RWPrefix+... is taken as a read lock with
// probability ReadShare and as the write lock otherwise; a key named
// SemPrefix+... is a semaphore of Limit permits. Other keys are the mutex.
// Its leases report their [Mode] to the workload.
type SharedLocker struct {
	M         *dlm.Manager
	Opts      []dlm.Option
	ReadShare float64
	Limit     int
}

func (l SharedLocker) TryLock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return l.take(ctx, key, ttl, false)
}

func (l SharedLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return l.take(ctx, key, ttl, true)
}

func (l SharedLocker) Close() error { return l.M.Close() }

func (l SharedLocker) take(ctx context.Context, key string, ttl time.Duration, wait bool) (Lease, error) {
	opts := append(append([]dlm.Option(nil), l.Opts...), dlm.WithTTL(ttl))
	var (
		lk   *dlm.Lock
		err  error
		mode = Exclusive
	)
	switch {
	case strings.HasPrefix(key, SemPrefix):
		mode = Permit
		var s *dlm.Semaphore
		if s, err = l.M.Semaphore(key, l.Limit); err != nil {
			return nil, err
		}
		if wait {
			lk, err = s.Acquire(ctx, opts...)
		} else {
			lk, err = s.TryAcquire(ctx, opts...)
		}
	case strings.HasPrefix(key, RWPrefix) && rand.Float64() < l.ReadShare:
		mode = Shared
		if wait {
			lk, err = l.M.RLock(ctx, key, opts...)
		} else {
			lk, err = l.M.TryRLock(ctx, key, opts...)
		}
	case wait:
		lk, err = l.M.Lock(ctx, key, opts...)
	default:
		lk, err = l.M.TryLock(ctx, key, opts...)
	}
	if err != nil {
		return nil, err
	}
	return sharedLease{lk, mode}, nil
}

// sharedLease is a held lock that says how it holds its key.
type sharedLease struct {
	*dlm.Lock
	mode Mode
}

// Mode is how the lease holds its key.
func (s sharedLease) Mode() Mode { return s.mode }
