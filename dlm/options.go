package dlm

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"
)

// Defaults used when no option says otherwise.
const (
	// DefaultTTL is how long a lock lives on the nodes unless extended.
	DefaultTTL = 10 * time.Second
	// DefaultDriftFactor is the share of the TTL allowed for clock drift
	// between the client and the nodes; 2 ms are added on top.
	DefaultDriftFactor = 0.01
	// DefaultKeyPrefix namespaces every key the library writes.
	DefaultKeyPrefix = "redlock:"
	// MaxKeyLen is the longest lock key accepted, in bytes.
	MaxKeyLen = 1024
)

// Bounds of the node timeout derived from the TTL when [WithNodeTimeout] is
// not given: a twentieth of the TTL, clamped to this range. It is the floor
// of each node's learned timeout, whose cap is a tenth of the TTL, at most
// learnedTimeoutGrowth times the floor (see [timing.timeoutCap]).
const (
	minDerivedNodeTimeout = 20 * time.Millisecond
	maxDerivedNodeTimeout = 250 * time.Millisecond
	learnedTimeoutGrowth  = 4
)

// Options come in three scopes, and the compiler keeps each where it
// belongs: an [Option] configures a [Manager] (as its default) or one call
// (as an override of the manager's default); a [ManagerOption] the Manager
// only ([New], [Open]), for every call; a [SemaphoreOption] one semaphore
// ([Manager.Semaphore]). Every Option is also a ManagerOption and a
// SemaphoreOption. Options are checked when used: an invalid value makes
// [New], [Open] or the call return an error wrapping [ErrInvalid], before
// any round trip.
type Option interface {
	ManagerOption
	SemaphoreOption
	apply(*config)
}

// A ManagerOption configures a [Manager] ([New], [Open]). Every [Option]
// is one, as the default of the manager's calls; [WithReplicaAck] is one
// only: it cannot be given to a single call.
type ManagerOption interface {
	applyManager(*config)
}

// A SemaphoreOption configures one semaphore ([Manager.Semaphore]): its
// permits' calls take the manager's options, overridden by these. Every
// [Option] is one; [WithPermitQuorum] is one only.
type SemaphoreOption interface {
	applySemaphore(*config)
}

// optionFunc is an [Option]: it applies in every scope.
type optionFunc func(*config)

func (f optionFunc) apply(c *config)          { f(c) }
func (f optionFunc) applyManager(c *config)   { f(c) }
func (f optionFunc) applySemaphore(c *config) { f(c) }

// managerOption is a [ManagerOption] only.
type managerOption func(*config)

func (f managerOption) applyManager(c *config) { f(c) }

// semaphoreOption is a [SemaphoreOption] only.
type semaphoreOption func(*config)

func (f semaphoreOption) applySemaphore(c *config) { f(c) }

// config is what the options of a manager, a semaphore or a call set.
// The groups of fields that decide together are types of their own, with
// their checks and the methods that decide with them; timing, logging and
// extension are embedded, their fields and methods the config's own.
type config struct {
	timing
	retry  retry // WithRetry (retry.go)
	prefix string
	logging
	extension
	fencing      fencing       // WithFencing, WithFenceExpiry (fencing.go)
	replicaAck   *replicaAck   // nil: no WAIT
	restartGuard time.Duration // 0: none
	fair         *Fairness     // nil: off
	permitQuorum int           // 0: derived (semaphores only)
	// leader marks an election's lock, and points to the value its
	// candidate stores beside it (election.go): the attempt stores it, and
	// the lock's extensions extend it with the lock. nil for any other
	// lock.
	leader *string
	// owner is WithOwner's label, nil for none.
	owner *ownerOption
}

// timing is how long a lock lives and how long its requests may take:
// the TTL, the drift allowance and the node timeout, which decide its
// validity.
type timing struct {
	ttl         time.Duration
	driftFactor float64
	nodeTimeout time.Duration // 0: derived from ttl
}

// logging is where what happens to locks goes: WithLogger's logger and
// WithHook's hook.
type logging struct {
	logger *slog.Logger
	// loggerSet is set by WithLogger, even with nil: without it, warnings
	// about the configuration go to slog.Default.
	loggerSet bool
	hook      Hook // nil: none
}

func defaultConfig() config {
	return config{
		timing:  timing{ttl: DefaultTTL, driftFactor: DefaultDriftFactor},
		retry:   retry{backoff: ExponentialBackoff(10*time.Millisecond, 200*time.Millisecond)},
		prefix:  DefaultKeyPrefix,
		logging: logging{logger: slog.New(discardHandler{})},
	}
}

// WithTTL sets how long a lock lives on the nodes (default [DefaultTTL]). It
// must be at least a millisecond and leave time after the drift allowance.
// Redis counts TTLs in whole milliseconds; finer parts are dropped.
func WithTTL(ttl time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = ttl })
}

// WithDriftFactor sets the share of the TTL subtracted from a lock's validity
// for clock drift between client and nodes (default [DefaultDriftFactor]),
// in [0, 0.5). Two milliseconds are always added for Redis' expiry precision.
func WithDriftFactor(f float64) Option {
	return optionFunc(func(c *config) { c.driftFactor = f })
}

// WithNodeTimeout sets a fixed bound on each request to one node: acquire,
// extend and release alike, never learned, never exceeded.
//
// Without it, the wait for a node follows the node. Acquires and releases
// wait as long as the node's learned timeout, learned per node from its
// recent round trips as TCP learns its retransmission timeout (RFC 6298):
// the smoothed round trip plus four times its variation, at least a
// floor above the smoothed round trip, and doubled each time a request
// waited for it in vain, so that a busy node gets more time rather than a
// storm of requests that all give up; the next reply sets it from the
// round trips again. The floor is a twentieth of the TTL, between 20 ms
// and 250 ms, the timeout of a node that answers at once; the cap is a
// tenth of the TTL, at most four times the floor (1 s for the default
// TTL), so that an acquire that waited it still leaves nine tenths of the
// TTL as validity. A node that has not answered yet is waited for as long
// as the cap, as TCP starts at a conservative second; one that stops
// answering makes a call that waits for every node (a release) wait at
// most the cap. A round's requests share one deadline, the longest
// timeout of the nodes it asks. Extensions, and the
// other bounds that follow from the node timeout (how long before the end
// of its validity a lock that could not be extended is reported lost, a
// key's reservation for a woken waiter), take the floor. Whatever the
// wait, a grant counts only within its validity, the TTL less the time
// the acquire took and the drift allowance.
//
// A batch of auto-extensions waits longer while its locks have time (see
// [WithAutoExtend]). A timeout set here must be below the TTL in effect,
// the manager's or a call's [WithTTL], and should be well below it:
// otherwise New, Open or the call returns an error wrapping [ErrInvalid].
// The derived timeout, and the TTL given to [Lock.Extend] (which may
// shorten the lock), are not checked.
func WithNodeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.nodeTimeout = d })
}

// WithKeyPrefix sets the prefix of every Redis key the library writes
// (default [DefaultKeyPrefix]).
func WithKeyPrefix(prefix string) Option {
	return optionFunc(func(c *config) { c.prefix = prefix })
}

// WithLogger sets where the library logs what happens to locks, as
// structured records of the events a [Hook] sees: node failures, losses and
// failed extensions at Warn, locks not obtained at Info, attempts, grants,
// extensions and releases at Debug, and so, by channel and length, are wake
// messages ignored as malformed. The failures of auto-extensions are
// counted into at most one Warn line a second per node, and one for the
// Manager (see [WithAutoExtend]); a failure or loss because the Manager
// closed is logged at Debug. Secrets and passwords are never logged. A
// nil logger, the default, discards everything, except that without
// WithLogger [New] and [Open] warn about an even number of nodes on
// [slog.Default]; WithLogger(nil) silences that too.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) {
		if l == nil {
			l = slog.New(discardHandler{})
		}
		c.logger, c.loggerSet = l, true
	})
}

// warnLogger is where warnings about the configuration and the nodes go:
// WithLogger's logger, or slog.Default without it.
func (lg *logging) warnLogger() *slog.Logger {
	if !lg.loggerSet {
		return slog.Default()
	}
	return lg.logger
}

// with returns a copy of c with a call's opts applied, validated.
func (c config) with(opts []Option) (config, error) {
	return withScope(c, opts, Option.apply)
}

// withManager returns a copy of c with a manager's opts applied, validated.
func (c config) withManager(opts []ManagerOption) (config, error) {
	return withScope(c, opts, ManagerOption.applyManager)
}

// withSemaphore returns a copy of c with a semaphore's opts applied,
// validated.
func (c config) withSemaphore(opts []SemaphoreOption) (config, error) {
	return withScope(c, opts, SemaphoreOption.applySemaphore)
}

// withScope returns a copy of c with opts, of one scope, applied by apply,
// validated.
func withScope[O any](c config, opts []O, apply func(O, *config)) (config, error) {
	for _, o := range opts {
		if any(o) == nil {
			return c, fmt.Errorf("%w: nil Option", ErrInvalid)
		}
		apply(o, &c)
	}
	if err := c.validate(); err != nil {
		return c, err
	}
	return c, c.validateNodeTimeout()
}

// validateNodeTimeout refuses a node timeout set with WithNodeTimeout that
// is not below the TTL of the same options. It is not part of validate,
// which Extend runs with its own TTL: a short extension, such as the last
// one before AutoExtend.MaxHold, stays possible under a longer node
// timeout, its answers bounded by the validity as any extension's are.
func (t *timing) validateNodeTimeout() error {
	if t.nodeTimeout > 0 && t.nodeTimeout >= t.ttl {
		return fmt.Errorf("%w: node timeout %v is not below the TTL %v: a node's late answer would use up the validity; want it well below the TTL (or none to derive it)", ErrInvalid, t.nodeTimeout, t.ttl)
	}
	return nil
}

func (c *config) validate() error {
	if c.owner != nil && c.owner.err != nil {
		return c.owner.err
	}
	if err := c.timing.validate(); err != nil {
		return err
	}
	if err := c.retry.validate(); err != nil {
		return err
	}
	if err := c.extension.validate(); err != nil {
		return err
	}
	if c.fair != nil {
		if err := c.fair.validate(c.timeout()); err != nil {
			return err
		}
	}
	if err := c.fencing.validate(c.ttl); err != nil {
		return err
	}
	if err := c.validateReplicaAck(); err != nil {
		return err
	}
	return c.validateGuard()
}

// validate checks the TTL, the drift factor and the node timeout's sign;
// the node timeout against the TTL is validateNodeTimeout's.
func (t *timing) validate() error {
	switch {
	case t.ttl < time.Millisecond:
		return fmt.Errorf("%w: TTL %v: want at least 1ms", ErrInvalid, t.ttl)
	case t.driftFactor < 0 || t.driftFactor >= 0.5 || t.driftFactor != t.driftFactor:
		return fmt.Errorf("%w: drift factor %v: want a number in [0, 0.5)", ErrInvalid, t.driftFactor)
	case t.validity(t.ttl) <= 0:
		return fmt.Errorf("%w: TTL %v leaves no validity after the drift allowance %v", ErrInvalid, t.ttl, t.drift(t.ttl))
	case t.nodeTimeout < 0:
		return fmt.Errorf("%w: node timeout %v: want a positive duration (or none to derive it from the TTL)", ErrInvalid, t.nodeTimeout)
	}
	return nil
}

// drift is the allowance subtracted from a lock's validity for a given TTL.
func (t *timing) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*t.driftFactor) + 2*time.Millisecond
}

// validity is how long a request that sets ttl on the nodes proves the lock
// held, counted from when the request was sent: ttl in whole milliseconds,
// as Redis applies it (finer parts are dropped), less the drift allowance.
// Every validity of a lock — grant, extension, a failed extension's bound,
// a lock handed over — is start + validity(ttl) for the request that set its
// keys' TTL, so [Lock.Until] never outlasts the keys on the nodes. A TTL
// whose validity is not positive is refused by validate.
func (t *timing) validity(ttl time.Duration) time.Duration {
	return ttl.Truncate(time.Millisecond) - t.drift(ttl)
}

// timeout is the bound on one node request: WithNodeTimeout's, or the
// one derived from the TTL, which is the floor of a node's learned
// timeout (see [timing.timeoutCap]).
func (t *timing) timeout() time.Duration {
	if t.nodeTimeout > 0 {
		return t.nodeTimeout
	}
	return min(max(t.ttl/20, minDerivedNodeTimeout), maxDerivedNodeTimeout)
}

// timeoutCap is the cap of a node's learned timeout ([round.RTO]), whose
// floor is timeout: a tenth of the TTL, which leaves nine tenths of it as
// the validity of an acquire that waited that long, at most
// learnedTimeoutGrowth times the floor (two doublings), and never below
// it. With WithNodeTimeout it is that timeout: fixed, never learned. A
// request takes it as [round.Request.Cap].
func (t *timing) timeoutCap() time.Duration {
	floor := t.timeout()
	if t.nodeTimeout > 0 {
		return floor
	}
	return max(floor, min(t.ttl/10, learnedTimeoutGrowth*floor))
}

// lossGuard is how long before the end of the validity a lock that could
// not be extended is reported lost: a twentieth of the validity, at least a
// millisecond, at most one node timeout.
func (t *timing) lossGuard() time.Duration {
	return min(max(t.validity(t.ttl)/20, time.Millisecond), t.timeout())
}

// ttlMillis is the TTL as Redis' PX argument.
func ttlMillis(ttl time.Duration) string {
	return decimal(ttl.Milliseconds())
}

// decimal returns n in decimal, as strconv.FormatInt does, from a small
// table of the values made last: the numbers a lock cycle sends (its TTL,
// a place's life, a reservation, the bound of a line) are nearly always
// the same few, and are then made without allocating.
func decimal(n int64) string {
	slot := &decimals[uint64(n)*0x9E3779B97F4A7C15>>(64-decimalBits)]
	if d := slot.Load(); d != nil && d.n == n {
		return d.s
	}
	d := &decimalText{n: n, s: strconv.FormatInt(n, 10)}
	slot.Store(d)
	return d.s
}

// decimals is decimal's table, indexed by a Fibonacci hash of the number.
var decimals [1 << decimalBits]atomic.Pointer[decimalText]

const decimalBits = 6

// decimalText is a number and its text.
type decimalText struct {
	n int64
	s string
}

// discardHandler is a slog.Handler that drops every record.
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }
