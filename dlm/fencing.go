package dlm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// WithFencing makes every grant of a lock carry a fencing token
// ([Lock.Token]) that is strictly greater than the token of any earlier
// grant of the same key, across all nodes, and a [Lock.GrantID] that tells
// the grant apart from any other: the protected resource admits a write only
// with a token above the largest it has seen, or equal to it from the same
// grant (see [Fence]). It costs nothing extra in the common case, where the
// nodes' counters agree, and one more round trip when they do not.
//
// It relies on nodes never losing their counters, which never expire: every
// node must persist every write (appendonly yes, appendfsync always). The
// delayed restart and [WithRestartGuard] keep mutual exclusion safe after a
// node lost its data, but not fencing: a node that rejoins empty, however
// late, has its counters at 0, and later grants can get a token equal to or
// below an earlier one's (docs/fencing.md).
func WithFencing() Option {
	return optionFunc(func(c *config) { c.fencing.on = true })
}

// fencing is whether grants carry fencing tokens ([WithFencing]) and how
// long their counters live ([WithFenceExpiry], fenceexpiry.go).
type fencing struct {
	on     bool
	expiry time.Duration // 0: counters never expire
}

// grantID derives a grant's id from its secret: 53 bits of a SHA-256
// hash, so that it fits a Lua or JSON number, and never 0.
func grantID(secret string) uint64 {
	sum := sha256.Sum256([]byte("dlm fencing grant\x00" + secret))
	id := binary.BigEndian.Uint64(sum[:8]) & (1<<53 - 1)
	return max(id, 1)
}

// fencedKeys returns the lock keys followed by their counters.
func fencedKeys(rkeys []string) []string {
	keys := make([]string, 0, 2*len(rkeys))
	keys = append(keys, rkeys...)
	for _, k := range rkeys {
		keys = append(keys, script.FenceKey(k))
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
func (q *quorumRounds) settleFence(ctx context.Context, cfg *config, rkeys []string, secret string, v *round.Vote) (fence int64, holding int) {
	var below []bool
	for _, f := range v.Fences {
		fence = max(fence, f)
	}
	for i, f := range v.Fences {
		switch {
		case f == fence:
			holding++
		case f > 0:
			if below == nil {
				below = make([]bool, len(v.Fences))
			}
			below[i] = true
		}
	}
	if holding >= round.Majority(len(q.nodes)) || below == nil {
		return fence, holding
	}
	raised, _ := q.Poll(ctx, &round.Request{
		Op: opLock, Script: script.RaiseFence, Keys: fencedKeys(rkeys),
		Args: []string{secret, strconv.FormatInt(fence, 10)},
		Want: 1, Timeout: cfg.timeout(), Cap: cfg.timeoutCap(), Only: below,
	})
	v.Cut = v.Cut || raised.Cut
	return fence, holding + raised.Yes
}

// ErrStaleToken is returned by [Fence.Admit] for a token below the largest
// it has admitted, or equal to it from another grant.
var ErrStaleToken = errors.New("dlm: stale fencing token")

// Fence is the protected resource's side of fencing: it admits an operation
// only if its token is greater than the largest token it admitted before, or
// equal to it from the same grant ([Lock.GrantID]), so a holder that lost
// its lock and was overtaken by a later grant is turned away, while one
// holder may write several times. Equal tokens of different grants are
// refused, never both admitted: they occur only after nodes lost their
// fencing counters (see [WithFencing]). A zero Fence admits any token. It is
// safe for concurrent use.
//
// A resource that persists its state should persist the largest token and
// its grant with it, as in "UPDATE ... SET fence = $1, grant_id = $2 WHERE
// id = $3 AND (fence < $1 OR (fence = $1 AND grant_id = $2))".
type Fence struct {
	mu    sync.Mutex
	last  uint64
	grant uint64
	seen  bool // a token was admitted
}

// Admit records token and grant, the [Lock.Token] and [Lock.GrantID] of the
// lock the operation is done under, and returns nil if token is greater than
// the largest token admitted so far, or equal to it with the same grant.
// Otherwise it returns an error wrapping [ErrStaleToken].
func (f *Fence) Admit(token, grant uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !f.seen || token > f.last:
	case token < f.last:
		return fmt.Errorf("%w: %d < %d", ErrStaleToken, token, f.last)
	case grant != f.grant:
		return fmt.Errorf("%w: %d was admitted for another grant", ErrStaleToken, token)
	}
	f.last, f.grant, f.seen = token, grant, true
	return nil
}

// Last returns the largest token admitted so far.
func (f *Fence) Last() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}
