package dlm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// MaxLeaderValueLen is the longest value a candidate may campaign with, in
// bytes. The value travels with every extension of the leadership, so it is
// meant for an address or a name, not a payload.
const MaxLeaderValueLen = 4096

// electionPrefix follows the key prefix in an election's keys, so that an
// election and a lock of the same name are different keys.
const electionPrefix = "election:"

// An election is a lock whose secret carries the leader's value: the lock key
// holds the random secret, ":" and the value. Extension, release and expiry
// are those of any lock, so the value lives exactly as long as the
// leadership on each node, and observers read it with script.Leader, which
// never reveals the secret. Elections take their locks with fencing: the
// fencing token is the leader's term, and a fenced lock is never handed over
// under its secret to the manager's next waiting caller, who would otherwise
// lead under the previous leader's value.

// Leadership is a won election, returned by [Manager.Campaign]. It lasts
// until [Leadership.Resign], its loss, or [Manager.Close] — not the context
// given to Campaign: it is kept by auto-extension under a context of its
// own. Its methods are safe for concurrent use.
//
// A nil *Leadership, which a failed Campaign returns, never panics: Resign
// returns an error wrapping [ErrNotHeld], Lost a closed channel, and the
// accessors zero values.
type Leadership struct {
	m     *Manager
	l     *Lock
	name  string
	value string
	// end cancels the context the leadership was won under, once the
	// leadership is over.
	end context.CancelFunc
}

// Campaign waits until this caller leads the election called name, then
// returns its [Leadership]. While it leads, [Manager.Observe] reports value
// to everyone observing the election. At most one candidate leads at a time,
// with the same guarantee as a lock: it is a lock taken with [WithFencing],
// whose fencing token is the leader's term ([Leadership.Term]), and kept by
// auto-extension ([WithAutoExtend], with the defaults unless an option says
// otherwise) until Resign, its loss, [AutoExtend.MaxHold] or [Manager.Close].
// A leader acts as leader only while [Leadership.Lost] is open, and before
// [Leadership.Until].
//
// ctx bounds the wait only: once Campaign has returned, ending ctx changes
// nothing. When ctx ends first, the error wraps ctx.Err(), and a lock won at
// that very moment is released; as with [Manager.Lock], it also keeps the
// class of the last attempt that completed ([ErrNotObtained] while another
// candidate leads, [ErrUnavailable]) and its [*QuorumError]. The other options are those of
// [Manager.Lock]; value is at most [MaxLeaderValueLen] bytes.
func (m *Manager) Campaign(ctx context.Context, name, value string, opts ...Option) (*Leadership, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	if len(value) > MaxLeaderValueLen {
		return nil, fmt.Errorf("%w: leader value of %d bytes: at most %d allowed", ErrInvalid, len(value), MaxLeaderValueLen)
	}
	cfg, err := m.cfg.with(opts)
	if err != nil {
		return nil, err
	}
	ext := AutoExtend{}
	if cfg.autoExtend != nil {
		ext = *cfg.autoExtend
	}
	lopts := append(slices.Clip(opts), WithKeyPrefix(cfg.prefix+electionPrefix), WithFencing(), WithAutoExtend(ext),
		optionFunc(func(c *config) { c.secretSuffix, c.observed = ":"+value, true }))
	// The lock is taken, and then extended, under lctx: ctx ends it while
	// Campaign waits, and only the leadership's end afterwards.
	lctx, end := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, end)
	l, err := m.lock(lctx, []string{name}, lopts, true)
	if !unhook() {
		end()
		if l != nil {
			l.Unlock(context.WithoutCancel(ctx))
		}
		// The wait ended with lctx, for ctx's reason: say ctx's, and
		// keep the last attempt's outcome.
		var we *waitError
		if errors.As(err, &we) {
			stopped := *we
			stopped.why = ctx.Err()
			return nil, fmt.Errorf("dlm: campaign %q: %w", name, &stopped)
		}
		return nil, fmt.Errorf("dlm: campaign %q: %w", name, ctx.Err())
	}
	if err != nil {
		end()
		return nil, fmt.Errorf("dlm: campaign %q: %w", name, err)
	}
	ld := &Leadership{m: m, l: l, name: name, value: value, end: end}
	// The leadership's context ends with it: no goroutine per leadership
	// waits for that, the lock's end cancels it.
	l.mu.Lock()
	if l.ended() {
		end()
	} else {
		l.onEnd = append(l.onEnd, func(error) { end() })
	}
	l.mu.Unlock()
	return ld, nil
}

// Name returns the election's name, as given to [Manager.Campaign].
func (ld *Leadership) Name() string {
	if ld == nil {
		return ""
	}
	return ld.name
}

// Value returns the value the leader campaigned with.
func (ld *Leadership) Value() string {
	if ld == nil {
		return ""
	}
	return ld.value
}

// Term returns the leadership's fencing token: every leadership of the
// election has a greater one than all before it (see [WithFencing]).
// Resources that the leader writes can refuse a deposed leader with [Fence].
func (ld *Leadership) Term() uint64 { return ld.lock().Token() }

// GrantID tells this term's grant apart from another grant that was given
// the same term after fencing counters were lost; see [Lock.GrantID] and
// [Fence.Admit].
func (ld *Leadership) GrantID() uint64 { return ld.lock().GrantID() }

// Until returns the end of the leadership's current validity by the local
// monotonic clock; extension moves it on.
func (ld *Leadership) Until() time.Time { return ld.lock().Until() }

// Lost returns a channel that is closed when the leadership ends: resigned,
// or lost as [Lock.Lost] tells — a guard interval before its validity ends
// without a successful extension, which is also what follows
// [Manager.Close].
func (ld *Leadership) Lost() <-chan struct{} { return ld.lock().Lost() }

// lock returns the leadership's lock, nil for a nil Leadership.
func (ld *Leadership) lock() *Lock {
	if ld == nil {
		return nil
	}
	return ld.l
}

// Resign gives the leadership up: it stops the extension and releases the
// election on every node, which observers hear at once. It runs even if
// ctx is already done, each node bounded by the node timeout. It returns an
// error wrapping [ErrLockLost] when the leadership had been lost before,
// and one wrapping [ErrNotHeld] on a second call or a nil Leadership.
func (ld *Leadership) Resign(ctx context.Context) error {
	if ld == nil {
		return fmt.Errorf("dlm: resign: nil *Leadership (not won): %w", ErrNotHeld)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	err := ld.l.Unlock(ctx)
	ld.end()
	if err != nil {
		return fmt.Errorf("dlm: resign %q: %w", ld.name, err)
	}
	return nil
}
