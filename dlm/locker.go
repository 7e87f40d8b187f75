package dlm

import "context"

// Locker takes locks by key: the part of [Manager] that code holding locks
// usually needs. Depend on it to swap the Redis-backed manager for the
// in-memory one of package [github.com/dlmgo/redlock/dlm/memlock] in unit
// tests; both are a *Manager, with the same semantics and errors.
type Locker interface {
	// Lock is [Manager.Lock].
	Lock(ctx context.Context, key string, opts ...Option) (*Lock, error)
	// TryLock is [Manager.TryLock].
	TryLock(ctx context.Context, key string, opts ...Option) (*Lock, error)
	// Do is [Manager.Do].
	Do(ctx context.Context, key string, fn func(ctx context.Context) error, opts ...Option) error
}

var _ Locker = (*Manager)(nil)
