package dlm

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// MaxPermits is the largest limit a [Semaphore] accepts.
const MaxPermits = 1 << 20

// SemaphoreQuorum returns the number of nodes a permit of a semaphore with
// the given limit needs among the given number of nodes: the least q with
// q > nodes·limit/(limit+1). Each node grants at most limit permits, so
// limit+1 holders would need (limit+1)·q grants from the nodes' nodes·limit
// at most: with this q they cannot all be served, and never more than
// limit permits are held at once. A majority is not enough once limit > 1
// (docs/design.md has the proof). For 5 nodes: 3 for a limit of 1, 4 for 2
// or 3, and all 5 from 4 on. It returns 0 when nodes or limit is below 1.
func SemaphoreQuorum(nodes, limit int) int {
	if nodes < 1 || limit < 1 {
		return 0
	}
	return nodes*limit/(limit+1) + 1
}

// A Semaphore lets at most a limit of holders in at once, across every
// client that uses it with the same name and limit. Each permit is a lease:
// a secret with the TTL on each node, so the permit of a holder that crashes
// frees itself when its TTL ends. A permit is held when
// [SemaphoreQuorum](nodes, limit) nodes granted it within its validity.
// Create one with [Manager.Semaphore]; it is safe for concurrent use. A
// nil *Semaphore never panics: its calls return an error wrapping
// [ErrInvalid], its accessors zero values.
//
// Every client must use the same limit for a name: a node enforces the limit
// each request carries. The quorum grows with the limit, and once it equals
// the number of nodes a single node down blocks every acquire: keep the
// limit small, or use more nodes.
type Semaphore struct {
	m    *Manager
	name string
	kind *leaseKind
	opts []Option
}

// Semaphore returns the semaphore called name with the given limit, whose
// calls use opts after the manager's defaults and before their own. It
// returns an error wrapping [ErrInvalid] when the name, the limit or the
// options are invalid, or when [WithPermitQuorum] asks for a quorum that
// cannot keep the limit. It makes no round trip.
//
// When the derived quorum is every node, while the manager's locks would
// survive a node down (3 nodes and a limit of 2, 5 nodes and a limit of 4),
// Semaphore logs a warning once per manager, on the logger of [WithLogger]
// or, without that option, on [slog.Default]: limits up to nodes−2
// tolerate a node down. A quorum asked for with [WithPermitQuorum] is not
// reported.
func (m *Manager) Semaphore(name string, limit int, opts ...SemaphoreOption) (*Semaphore, error) {
	if err := checkKey(name); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxPermits {
		return nil, fmt.Errorf("%w: semaphore %q: limit %d: want 1 to %d", ErrInvalid, name, limit, MaxPermits)
	}
	cfg, err := m.cfg.withSemaphore(opts)
	if err != nil {
		return nil, err
	}
	if err := m.nodes.checkTag(name, cfg.redisKey(name)); err != nil {
		return nil, err
	}
	n := len(m.nodes)
	q, err := permitQuorum(n, limit, cfg.permitQuorum)
	if err != nil {
		return nil, fmt.Errorf("semaphore %q: %w", name, err)
	}
	if cfg.permitQuorum == 0 {
		m.warnNoFailureTolerance(&cfg, name, limit, q)
	}
	// The options of every scope are the defaults of the permits' calls;
	// those of the semaphore only were read here.
	var calls []Option
	for _, o := range opts {
		if co, ok := o.(Option); ok {
			calls = append(calls, co)
		}
	}
	return &Semaphore{m: m, name: name, opts: calls, kind: permitKind(limit, q)}, nil
}

// warnNoFailureTolerance logs, once per manager, at Warn on the logger of
// [WithLogger] (on [slog.Default] without that option), a semaphore whose
// derived quorum q is every node although the manager's locks survive a
// node down: a single node down then blocks every acquire of its permits.
// That happens from a limit of nodes−1 on; limits up to nodes−2 tolerate a
// node down.
func (m *Manager) warnNoFailureTolerance(cfg *config, name string, limit, q int) {
	n := len(m.nodes)
	if q < n || round.Majority(n) == n || m.warnedPermits.Swap(true) {
		return
	}
	cfg.warnLogger().Warn("dlm: a semaphore's permits need every node: one node down blocks every acquire; use a smaller limit or more nodes (logged once per manager)",
		slog.String("semaphore", name), slog.Int("limit", limit), slog.Int("nodes", n), slog.Int("quorum", q),
		slog.Int("largest_limit_tolerating_a_node_down", n-2))
}

// permitKind is the lease kind of a semaphore's permits.
func permitKind(limit, q int) *leaseKind {
	return &leaseKind{
		what: "permit", suffix: script.PermitsSuffix, limit: limit, need: q,
		acquire: [2]*driver.Script{script.PermitAcquire, script.GuardedPermitAcquire},
		extend:  script.PermitExtend, unlock: script.PermitRelease,
	}
}

// permitQuorum checks the quorum asked of a semaphore of limit over n nodes
// (0: derive it) and returns the quorum to use.
func permitQuorum(n, limit, asked int) (int, error) {
	least := SemaphoreQuorum(n, limit)
	switch {
	case asked == 0:
		return least, nil
	case asked < 0:
		return 0, fmt.Errorf("%w: permit quorum %d: want a number of nodes, or 0 to derive it", ErrInvalid, asked)
	case asked > n:
		return 0, fmt.Errorf("%w: permit quorum %d: more than the %d nodes", ErrInvalid, asked, n)
	case asked < least:
		// (limit+1) holders on asked nodes each need (limit+1)·asked
		// grants; n nodes of limit permits each can give that many.
		return 0, fmt.Errorf("%w: permit quorum %d of %d nodes cannot keep a limit of %d: %d holders could each be granted by %d nodes, since (%d+1)·%d ≤ %d·%d grants fit; want at least %d",
			ErrInvalid, asked, n, limit, limit+1, asked, limit, asked, n, limit, least)
	}
	return asked, nil
}

// WithPermitQuorum sets the number of nodes a [Semaphore]'s permit needs
// (default: [SemaphoreQuorum] of the nodes and the limit, the least that is
// safe). A larger quorum is allowed, up to the number of nodes; a smaller
// one is refused with an error wrapping [ErrInvalid] that says why. It is
// a [SemaphoreOption] only: [Manager.Semaphore] takes it, and no other
// call.
func WithPermitQuorum(q int) SemaphoreOption {
	return semaphoreOption(func(c *config) { c.permitQuorum = q })
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Limit returns how many permits may be held at once.
func (s *Semaphore) Limit() int {
	if s == nil {
		return 0
	}
	return s.kind.limit
}

// Quorum returns the number of nodes a permit needs.
func (s *Semaphore) Quorum() int {
	if s == nil {
		return 0
	}
	return s.kind.need
}

// Acquire takes a permit, retrying as [Manager.Lock] does — woken when a
// permit is given back — until it is obtained, the retry budget is spent,
// or ctx ends; its errors are those of Lock, so one that ctx ended matches
// ctx.Err() and, when an attempt completed, [ErrNotObtained] (the permits
// were all held) or [ErrUnavailable]. The permit is a [Lock]: [Lock.Unlock] gives it back, and
// [Lock.Extend], [Lock.Lost], [Lock.Until] and [WithAutoExtend] work as for
// the mutex. It carries no fencing token. [WithFairness] does not apply;
// [WithRestartGuard] does.
func (s *Semaphore) Acquire(ctx context.Context, opts ...Option) (*Lock, error) {
	if s == nil {
		return nil, errNilSemaphore
	}
	return s.m.lockLease(ctx, s.kind, s.name, s.with(opts), true)
}

// TryAcquire makes one attempt to take a permit. It returns an error
// wrapping [ErrNotObtained] when the permits are all held.
func (s *Semaphore) TryAcquire(ctx context.Context, opts ...Option) (*Lock, error) {
	if s == nil {
		return nil, errNilSemaphore
	}
	return s.m.lockLease(ctx, s.kind, s.name, s.with(opts), false)
}

// Do takes a permit, waiting as [Semaphore.Acquire] does, runs fn while
// keeping it extended, and gives it back when fn returns, as [Manager.Do]
// does for the mutex: fn's context is cancelled, with a cause wrapping
// [ErrLockLost], when the permit is lost.
func (s *Semaphore) Do(ctx context.Context, fn func(ctx context.Context) error, opts ...Option) error {
	if s == nil {
		return errNilSemaphore
	}
	return s.m.do(ctx, s.kind, []string{s.name}, fn, s.with(opts))
}

// errNilSemaphore is the error of a call on a nil *Semaphore.
var errNilSemaphore = fmt.Errorf("%w: nil *Semaphore (Manager.Semaphore failed)", ErrInvalid)

func (s *Semaphore) with(opts []Option) []Option {
	if len(s.opts) == 0 {
		return opts
	}
	return append(append(make([]Option, 0, len(s.opts)+len(opts)), s.opts...), opts...)
}
