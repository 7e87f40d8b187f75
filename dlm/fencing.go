package dlm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// fenceSuffix names a lock key's fencing counter: the lock key plus this
// suffix, in the same hash slot.
const fenceSuffix = ":fence"

// WithFencing makes every grant of a lock carry a fencing token
// ([Lock.Token]) that is strictly greater than the token of any earlier
// grant of the same key, across all nodes: the protected resource rejects
// writes with a token below one it has seen (see [Fence]). It costs nothing
// extra in the common case, where the nodes' counters agree, and one more
// round trip when they do not. It relies on nodes keeping their counters:
// persistence, or the delayed restart that Redlock needs anyway
// (docs/fencing.md).
func WithFencing() Option {
	return optionFunc(func(c *config) { c.fencing = true })
}

// Token returns the lock's fencing token, or 0 when the lock was taken
// without [WithFencing]. Tokens of successive grants of a key strictly
// increase; they stay below 2^53.
func (l *Lock) Token() uint64 { return l.fence }

// fencedKeys returns the lock keys followed by their counters.
func fencedKeys(rkeys []string) []string {
	keys := make([]string, 0, 2*len(rkeys))
	keys = append(keys, rkeys...)
	for _, k := range rkeys {
		keys = append(keys, k+fenceSuffix)
	}
	return keys
}

// settleFence turns a fenced acquire's quorum of grants into a token. Each
// granting node set its counters to one more than their largest value and
// reported it; the token is the largest report. If a quorum of nodes
// reported it, they hold it already, written while they hold our keys.
// Otherwise the granting nodes below it raise their counters to it, again
// only while they still hold our keys. It returns the token and the number
// of nodes that hold it, which must be a quorum.
func (m *Manager) settleFence(ctx context.Context, cfg *config, rkeys []string, token string, v *vote) (fence int64, holding int) {
	var below []bool
	for _, f := range v.fences {
		fence = max(fence, f)
	}
	for i, f := range v.fences {
		switch {
		case f == fence:
			holding++
		case f > 0:
			if below == nil {
				below = make([]bool, len(v.fences))
			}
			below[i] = true
		}
	}
	if holding >= quorum(len(m.nodes)) || below == nil {
		return fence, holding
	}
	raised, _ := m.poll(ctx, &request{
		op: opLock, script: raiseFenceScript, keys: fencedKeys(rkeys),
		args: []string{token, strconv.FormatInt(fence, 10)},
		want: 1, timeout: cfg.timeout(), only: below,
	})
	return fence, holding + raised.yes
}

// ErrStaleToken is returned by [Fence.Admit] for a token below the largest
// it has admitted.
var ErrStaleToken = errors.New("dlm: stale fencing token")

// Fence is the protected resource's side of fencing: it admits an
// operation only if its token is at least the largest token it admitted
// before, so a holder that lost its lock (and was overtaken by a later
// grant) is turned away. Equal tokens are admitted, since one holder may
// write several times. A zero Fence admits any token. It is safe for
// concurrent use; a resource that persists its state should persist the
// largest token with it, as in "UPDATE ... SET fence = $1 WHERE id = $2 AND
// fence <= $1".
type Fence struct {
	mu   sync.Mutex
	last uint64
}

// Admit records token and returns nil if it is at least the largest token
// admitted so far, or returns an error wrapping [ErrStaleToken].
func (f *Fence) Admit(token uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.last {
		return fmt.Errorf("%w: %d < %d", ErrStaleToken, token, f.last)
	}
	f.last = token
	return nil
}

// Last returns the largest token admitted so far.
func (f *Fence) Last() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}
