package dlm

import (
	"context"
	"fmt"
	"slices"
)

// ErrUpgrade is returned by [Manager.Lock], [Manager.TryLock], [Manager.Do]
// and their multi-key forms when the context shows that the caller holds a
// read lock on the key (it runs inside [Manager.RDo]): a read lock cannot be
// upgraded to the write lock, since the writer would wait for its own read
// lock to end. Release the read lock first. It wraps [ErrInvalid]; check it
// with errors.Is.
var ErrUpgrade = fmt.Errorf("%w: a read lock cannot be upgraded to a write lock", ErrInvalid)

// RLock takes a read lock on key, retrying as [Manager.Lock] does until it is
// obtained, the retry budget is spent, or ctx ends.
//
// The write lock on the same key is the mutex: [Manager.Lock],
// [Manager.TryLock] and [Manager.Do] with the same key. Any number of
// readers hold the lock together, each under a lease of its own — a secret
// with the TTL on each node — so a reader that crashes frees its share when
// its TTL ends. While readers hold the key no writer is granted it, and
// while a writer holds it no reader is.
//
// Writers are preferred: a writer that waits for readers to leave
// ([Manager.Lock], not [Manager.TryLock]) records its intent on the nodes
// from its first attempt on, which keeps new readers out for the writer's
// TTL (renewed by each of its attempts, however far apart) or until a
// writer obtains the lock. Readers already in may extend their leases. So a
// stream of readers cannot starve a writer.
//
// Both sides need a majority of the nodes, and any two majorities share a
// node, on which a reader and a writer exclude each other: a read lock and
// the write lock are never held at once (within their validity, under the
// assumptions of the mutex, docs/design.md).
//
// The returned [Lock] is a read lease: [Lock.Unlock], [Lock.Extend],
// [Lock.Lost], [Lock.Until] and [WithAutoExtend] work as for the mutex. It
// carries no fencing token ([Lock.Token] is 0): fencing orders writers.
// [WithFairness] does not apply to readers; [WithRestartGuard] does.
//
// A read lock is not upgraded. A caller that holds a read lock and calls
// [Manager.Lock] on the same key waits for its own read lease to end, as
// with [sync.RWMutex] (the manager cannot tell it from another caller): at
// its TTL when it is not extended, never while it is auto-extended, so the
// call then ends with its ctx. Inside [Manager.RDo], where the context
// carries the read lock, Lock, TryLock and Do on the key are refused with
// [ErrUpgrade] instead. Release the read lock first.
//
// RLock waits, retries and fails as [Manager.Lock] does: when ctx ends
// first, the error wraps ctx.Err() and the last complete attempt's
// [*QuorumError], so it matches [ErrNotObtained] (a writer holds the key
// or waits for it) or [ErrUnavailable] (too many nodes failed).
func (m *Manager) RLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return m.lockLease(ctx, readLease, key, opts, true)
}

// TryRLock makes one attempt to take a read lock on key (see
// [Manager.RLock]). It returns an error wrapping [ErrNotObtained] when a
// writer holds the key or waits for it.
func (m *Manager) TryRLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return m.lockLease(ctx, readLease, key, opts, false)
}

// RDo is [Manager.Do] for a read lock: it takes a read lock on key, waiting
// as [Manager.RLock] does, runs fn while keeping the lease extended, and
// releases it when fn returns. fn's context is cancelled, with a cause
// wrapping [ErrLockLost], when the lease is lost; [LockFromContext] returns
// the lease. A write lock on key asked for with fn's context is refused
// with [ErrUpgrade].
func (m *Manager) RDo(ctx context.Context, key string, fn func(ctx context.Context) error, opts ...Option) error {
	return m.do(ctx, readLease, []string{key}, fn, opts)
}

// refuseUpgrade refuses the write lock on keys to a caller whose ctx
// carries a read lock on one of them (inside [Manager.RDo]).
func refuseUpgrade(ctx context.Context, keys []string) error {
	l := LockFromContext(ctx)
	if l == nil || l.kind != readLease || !slices.Contains(keys, l.keys[0]) {
		return nil
	}
	return fmt.Errorf("dlm: lock %q: the caller holds a read lock on it: %w", l.keys[0], ErrUpgrade)
}

// refuseDowngrade refuses a read lock on key to a caller whose ctx carries
// the write lock on it (inside [Manager.Do]): the reader would wait for its
// own writer.
func refuseDowngrade(ctx context.Context, key string) error {
	l := LockFromContext(ctx)
	if l == nil || l.kind != nil || !slices.Contains(l.keys, key) {
		return nil
	}
	return fmt.Errorf("%w: read lock %q: the caller holds the write lock on it; release it first", ErrInvalid, key)
}
