package dlm

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
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
// not given: a twentieth of the TTL, clamped to this range.
const (
	minDerivedNodeTimeout = 20 * time.Millisecond
	maxDerivedNodeTimeout = 250 * time.Millisecond
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

type config struct {
	ttl          time.Duration
	driftFactor  float64
	nodeTimeout  time.Duration // 0: derived from ttl
	tries        int           // 0: until the context ends
	backoff      Backoff
	prefix       string
	logger       *slog.Logger
	autoExtend   *AutoExtend // nil: off
	fencing      bool
	fenceExpiry  time.Duration // 0: counters never expire
	replicaAck   *replicaAck   // nil: no WAIT
	hook         Hook          // nil: none
	restartGuard time.Duration // 0: none
	fair         *Fairness     // nil: off
	permitQuorum int           // 0: derived (semaphores only)
	// observed marks an election's lock: its releases are announced on
	// the broadcast channel, for the observers (Observe), and its
	// extensions extend the leader's value with it (election.go).
	observed bool
	// extendWithCtx ends auto-extension with the context of the call that
	// took the lock, as Do wants; otherwise it outlives that context.
	extendWithCtx bool
	// loggerSet is set by WithLogger, even with nil: without it, warnings
	// about the configuration go to slog.Default.
	loggerSet bool
}

func defaultConfig() config {
	return config{
		ttl:         DefaultTTL,
		driftFactor: DefaultDriftFactor,
		backoff:     ExponentialBackoff(10*time.Millisecond, 200*time.Millisecond),
		prefix:      DefaultKeyPrefix,
		logger:      slog.New(discardHandler{}),
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

// WithNodeTimeout bounds each request to one node: acquire, extend and
// release alike. By default it is a twentieth of the TTL, between 20 ms and
// 250 ms, so a dead node cannot consume the lock's validity. (A batch of
// auto-extensions waits longer while its locks have time: see
// [WithAutoExtend].) A timeout set
// here must be below the TTL in effect, the manager's or a call's
// [WithTTL], and should be well below it: otherwise New, Open or the call
// returns an error wrapping [ErrInvalid]. The derived timeout, and the TTL
// given to [Lock.Extend] (which may shorten the lock), are not checked.
func WithNodeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.nodeTimeout = d })
}

// WithRetry sets how [Manager.Lock] retries: at most tries attempts in all
// (0 means until the context ends, the default), waiting backoff(n) between
// attempt n and n+1, with jitter: the wait is drawn uniformly from
// [backoff(n)/2, backoff(n)]. A nil backoff keeps the current one. The default
// is [ExponentialBackoff] from 10 ms to 200 ms.
//
// With tries > 0, a Lock call stays out of the Manager's queue of callers
// waiting for the same keys, and out of the hand-over within it: it
// competes on the nodes from its first attempt, is never handed a lock, and
// its lock is released on the nodes at Unlock rather than handed to the
// next queued caller (see [Manager.Lock]). With tries 0 the call waits in
// that queue, and the head of the queue retries at this backoff.
func WithRetry(tries int, backoff Backoff) Option {
	return optionFunc(func(c *config) {
		c.tries = tries
		if backoff != nil {
			c.backoff = backoff
		}
	})
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
// messages ignored as malformed. Secrets and passwords are never logged. A
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
func (c *config) validateNodeTimeout() error {
	if c.nodeTimeout > 0 && c.nodeTimeout >= c.ttl {
		return fmt.Errorf("%w: node timeout %v is not below the TTL %v: a node's late answer would use up the validity; want it well below the TTL (or none to derive it)", ErrInvalid, c.nodeTimeout, c.ttl)
	}
	return nil
}

func (c *config) validate() error {
	switch {
	case c.ttl < time.Millisecond:
		return fmt.Errorf("%w: TTL %v: want at least 1ms", ErrInvalid, c.ttl)
	case c.driftFactor < 0 || c.driftFactor >= 0.5 || c.driftFactor != c.driftFactor:
		return fmt.Errorf("%w: drift factor %v: want a number in [0, 0.5)", ErrInvalid, c.driftFactor)
	case c.validity(c.ttl) <= 0:
		return fmt.Errorf("%w: TTL %v leaves no validity after the drift allowance %v", ErrInvalid, c.ttl, c.drift(c.ttl))
	case c.nodeTimeout < 0:
		return fmt.Errorf("%w: node timeout %v: want a positive duration (or none to derive it from the TTL)", ErrInvalid, c.nodeTimeout)
	case c.tries < 0:
		return fmt.Errorf("%w: retry tries %d: want 0 (until the context ends) or more", ErrInvalid, c.tries)
	case c.autoExtend != nil:
		if err := c.autoExtend.validate(); err != nil {
			return err
		}
	}
	if c.fair != nil {
		if err := c.fair.validate(c.timeout()); err != nil {
			return err
		}
	}
	if err := c.validateFenceExpiry(); err != nil {
		return err
	}
	if err := c.validateReplicaAck(); err != nil {
		return err
	}
	return c.validateGuard()
}

// drift is the allowance subtracted from a lock's validity for a given TTL.
func (c *config) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*c.driftFactor) + 2*time.Millisecond
}

// validity is how long a request that sets ttl on the nodes proves the lock
// held, counted from when the request was sent: ttl in whole milliseconds,
// as Redis applies it (finer parts are dropped), less the drift allowance.
// Every validity of a lock — grant, extension, a failed extension's bound,
// a lock handed over — is start + validity(ttl) for the request that set its
// keys' TTL, so [Lock.Until] never outlasts the keys on the nodes. A TTL
// whose validity is not positive is refused by validate.
func (c *config) validity(ttl time.Duration) time.Duration {
	return ttl.Truncate(time.Millisecond) - c.drift(ttl)
}

// timeout is the bound on one node request.
func (c *config) timeout() time.Duration {
	if c.nodeTimeout > 0 {
		return c.nodeTimeout
	}
	return min(max(c.ttl/20, minDerivedNodeTimeout), maxDerivedNodeTimeout)
}

// lossGuard is how long before the end of the validity a lock that could
// not be extended is reported lost: a twentieth of the validity, at least a
// millisecond, at most one node timeout.
func (c *config) lossGuard() time.Duration {
	return min(max(c.validity(c.ttl)/20, time.Millisecond), c.timeout())
}

// ttlMillis is the TTL as Redis' PX argument.
func ttlMillis(ttl time.Duration) string {
	return strconv.FormatInt(ttl.Milliseconds(), 10)
}

// discardHandler is a slog.Handler that drops every record.
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }
