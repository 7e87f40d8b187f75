package dlm

import (
	"context"
	"fmt"
	"slices"
)

// LockAll takes one lock over several keys, waiting as [Manager.Lock] does.
// On each node, one script takes all the keys or none, and a node counts
// toward the quorum only if it granted all of them; [Lock.Unlock] and
// [Lock.Extend] cover every key. The keys are sorted and duplicates dropped.
//
// A LockAll over keys a and b conflicts with a Lock of a, of b, or a LockAll
// sharing either. Each key keeps its own Redis key, in its own hash slot;
// for nodes that are Redis Cluster deployments, all keys of one LockAll must
// share a hash slot: give them a common "{tag}" prefix, as in "{order42}:a"
// and "{order42}:b".
func (m *Manager) LockAll(ctx context.Context, keys []string, opts ...Option) (*Lock, error) {
	keys, err := sortedUnique(keys)
	if err != nil {
		return nil, err
	}
	return m.lock(ctx, keys, opts, true)
}

// TryLockAll is [Manager.LockAll] with one attempt, as [Manager.TryLock].
func (m *Manager) TryLockAll(ctx context.Context, keys []string, opts ...Option) (*Lock, error) {
	keys, err := sortedUnique(keys)
	if err != nil {
		return nil, err
	}
	return m.lock(ctx, keys, opts, false)
}

// sortedUnique returns a sorted copy of keys without duplicates.
func sortedUnique(keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrInvalid)
	}
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out), nil
}
