package dlm

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
)

// EventKind says what an [Event] reports.
type EventKind int

// The events a [Hook] observes.
const (
	// EventAttempt: one acquire attempt ended; Err is nil when it won.
	EventAttempt EventKind = iota + 1
	// EventObtained: Lock, TryLock or their multi-key forms returned a
	// lock, after Attempts attempts in Duration.
	EventObtained
	// EventNotObtained: they returned Err instead.
	EventNotObtained
	// EventExtended: an extension succeeded.
	EventExtended
	// EventExtendFailed: an extension failed with Err.
	EventExtendFailed
	// EventLost: the lock is known lost, for the reason in Err.
	EventLost
	// EventReleased: Unlock finished; Err is its error, if any.
	EventReleased
	// EventNodeError: one node failed a request of operation Op.
	EventNodeError
	// EventDone: [Manager.Do], [Manager.DoAll], [Manager.RDo] or
	// [Semaphore.Do] returned Err, Duration after it was called. It is
	// sent for every call that got past the checks of its arguments,
	// whether the lock was obtained or not.
	EventDone
	// EventRenewal: the Manager started a round of the auto-extensions
	// that were due ([WithAutoExtend]), For of them, at Start. Duration is
	// the renewal lag: how much later than planned the most overdue of
	// them started. Err wraps [ErrRenewalBehind] when the round started
	// late enough that locks are at risk (logged at Warn, at most once a
	// second); nil otherwise. A round the nodes do not keep up with —
	// a batch of its extensions that waited for a node too long, or that
	// a node left unanswered until its deadline — has one more, whose Err
	// wraps [ErrRenewalBehind], Duration is how long that batch waited,
	// and For the extensions it carried, sent before they are settled. It
	// is the Manager's, not one lock's: Key is empty, and the hook and
	// logger are the Manager's ([New], [Open]).
	EventRenewal
	// EventReleaseRetry: the Manager sent a release again to Node in the
	// background, Attempts times from Start over Duration: the release
	// had failed there, or had freed nothing on a node whose acquire
	// request failed and may run after it (see [Lock.Unlock]). One event
	// ends each release retried: Err is nil when the node answered it (or
	// the acquire never ran there before the key's TTL); otherwise it
	// says why it was given up — the key's TTL reached with the node still
	// failing (wrapping the node's last failure), too many releases being
	// retried at once, or [Manager.Close] (wrapping [ErrClosed]). Key is
	// the Redis key of the release (with the prefix). It is the
	// Manager's: the hook and logger are the Manager's ([New], [Open]).
	EventReleaseRetry
	// EventWaiting: a call that waits for a lock (Lock, Do, their
	// multi-key, read and semaphore forms, Campaign) began, at Start; its
	// EventObtained or EventNotObtained, with Waited set, ends the wait.
	// With them a hook counts the callers waiting per key.
	EventWaiting
)

var kindNames = [...]string{"", "attempt", "obtained", "not_obtained", "extended", "extend_failed", "lost", "released", "node_error", "done", "renewal", "release_retry", "waiting"}

// String returns the kind's name, such as "obtained".
func (k EventKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Event is one thing that happened to a lock. It never carries the holder's
// secret.
type Event struct {
	Kind EventKind
	Op   string // "lock", "extend", "unlock" or "do"
	Key  string
	// Node is the failing node's address, for EventNodeError.
	Node string
	// NodeErrors are the node failures of the vote that EventAttempt,
	// EventExtended, EventExtendFailed or EventReleased reports, in node
	// order; each was sent as an EventNodeError just before. They let a
	// hook attach a node's failure to the operation it belongs to.
	NodeErrors []*NodeError
	// Start and Duration time the operation, attempt or request.
	Start    time.Time
	Duration time.Duration
	// Attempts counts the acquire attempts, for EventObtained and
	// EventNotObtained.
	Attempts int
	// For, Against and Failed are the vote, where one was taken. For an
	// EventRenewal, For is the number of locks the round extends.
	For, Against, Failed int
	// Token is the fencing token ([Lock.Token]), when fencing is on and a
	// lock was held. Logs name it "fence".
	Token uint64
	Err   error
	// Held is how long the lock was held, for EventReleased (until Unlock
	// was called) and EventLost (until the loss): from its grant to the
	// caller (or its hand-over, within the Manager). 0 for a lock from
	// [Manager.Resume].
	Held time.Duration
	// Waited reports, for EventObtained and EventNotObtained, that the
	// call waited for the lock, and sent an EventWaiting when it began
	// (TryLock does not wait).
	Waited bool
}

// Hook observes lock operations: attempts, grants, extensions, losses,
// releases and node failures, with their durations. contrib/otel turns
// events into OpenTelemetry spans and metrics.
type Hook interface {
	// OnEvent receives e on the goroutine of the operation, never while
	// the lock's internal mutex is held; an [EventLost] comes only after
	// [Lock.Lost] was closed and Do's context cancelled, so a slow hook
	// cannot delay the loss signal. It should still be quick, since it
	// delays the operation. e is valid only during the call. ctx carries
	// the values of the operation's context but never its cancellation or
	// deadline: an operation that ended with its context is reported like
	// any other.
	OnEvent(ctx context.Context, e *Event)
}

// WithHook sends every event of the manager or call to h. Without a hook,
// events cost nothing beyond what the logger asks for.
func WithHook(h Hook) Option {
	return optionFunc(func(c *config) { c.hook = h })
}

// eventLevel is the log level of each kind; failures are louder.
func eventLevel(k EventKind, err error) slog.Level {
	switch k {
	case EventLost, EventNodeError, EventExtendFailed:
		if errors.Is(err, ErrClosed) {
			// The Manager closed: no failure to warn about.
			return slog.LevelDebug
		}
		return slog.LevelWarn
	case EventRenewal:
		if err != nil {
			return slog.LevelWarn
		}
	case EventNotObtained:
		return slog.LevelInfo
	case EventReleased:
		if err != nil {
			return slog.LevelWarn
		}
	case EventReleaseRetry:
		switch {
		case errors.Is(err, ErrClosed):
			return slog.LevelInfo
		case err != nil:
			return slog.LevelWarn
		}
	}
	return slog.LevelDebug
}

// wants reports whether an event of kind k would be observed or logged, so
// that callers build events only then.
func (lg *logging) wants(ctx context.Context, k EventKind, err error) bool {
	return lg.hook != nil || lg.logger.Enabled(ctx, eventLevel(k, err))
}

// emit sends e to the hook and the logger.
func (lg *logging) emit(ctx context.Context, e *Event) {
	ctx = lg.observe(ctx, e)
	lg.log(ctx, e)
}

// observe sends e to the hook, and returns the context to log it with.
func (lg *logging) observe(ctx context.Context, e *Event) context.Context {
	if ctx.Done() != nil {
		// The event reports what happened, also to an operation whose
		// context ended: observers get its values (a trace's span), not
		// its end, under which some drop what they record.
		ctx = context.WithoutCancel(ctx)
	}
	if lg.hook != nil {
		lg.hook.OnEvent(ctx, e)
	}
	return ctx
}

// log sends e to the logger, if it wants it.
func (lg *logging) log(ctx context.Context, e *Event) {
	level := eventLevel(e.Kind, e.Err)
	if !lg.logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("event", e.Kind.String()), slog.String("key", e.Key))
	if e.Node != "" {
		attrs = append(attrs, slog.String("node", e.Node))
	}
	attrs = append(attrs, slog.Duration("duration", e.Duration))
	switch {
	case e.Kind == EventRenewal:
		attrs = append(attrs, slog.Int("locks", e.For))
	case e.For+e.Against+e.Failed > 0:
		attrs = append(attrs, slog.Int("for", e.For), slog.Int("against", e.Against), slog.Int("failed", e.Failed))
	}
	if e.Attempts > 0 {
		attrs = append(attrs, slog.Int("attempts", e.Attempts))
	}
	if e.Token > 0 {
		attrs = append(attrs, slog.Uint64("fence", e.Token))
	}
	if e.Held > 0 {
		attrs = append(attrs, slog.Duration("held", e.Held))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("error", e.Err))
	}
	lg.logger.LogAttrs(ctx, level, "dlm: "+e.Op+" "+e.Kind.String(), attrs...)
}

// emitVote sends the node failures of a vote, then ev with the vote filled
// in, if anyone is listening.
func (lg *logging) emitVote(ctx context.Context, v *round.Vote, ev Event, nodes []*node) {
	if v.Errs != nil && lg.wants(ctx, EventNodeError, nil) {
		for i, err := range v.Errs {
			if err != nil {
				lg.emit(ctx, &Event{Kind: EventNodeError, Op: ev.Op, Key: ev.Key, Node: nodes[i].addr, Start: ev.Start, Duration: ev.Duration, Err: err})
			}
		}
	}
	if lg.wants(ctx, ev.Kind, ev.Err) {
		e := ev // a copy, so that ev stays off the heap when nobody listens
		e.For, e.Against, e.Failed = v.Yes, v.No, v.Failed
		e.NodeErrors = voteErrors(v, nodes)
		lg.emit(ctx, &e)
	}
}

// voteErrors returns the vote's node failures in node order, or nil when
// no node failed.
func voteErrors(v *round.Vote, nodes []*node) []*NodeError {
	if v.Errs == nil {
		return nil
	}
	out := make([]*NodeError, 0, v.Failed)
	for i, err := range v.Errs {
		if err == nil {
			continue
		}
		nerr, ok := err.(*NodeError)
		if !ok {
			nerr = &NodeError{Node: nodes[i].addr, Err: err}
		}
		out = append(out, nerr)
	}
	return out
}
