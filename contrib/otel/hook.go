package otel

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/dlmgo/redlock/dlm"
)

// ScopeName is the instrumentation scope of the hook's tracer and meter.
const ScopeName = "github.com/dlmgo/redlock/contrib/otel"

// Hook is a [dlm.Hook] that turns lock events into the OpenTelemetry spans
// and metrics the package documentation lists. Make one with [NewHook] and
// give it to [dlm.WithHook], for a manager or a single call. It is safe for
// concurrent use, and one Hook may serve several managers.
type Hook struct {
	tracer     trace.Tracer
	inst       instruments
	waitingKey func(string) string // WithWaitingKeys'; nil for none
}

var _ dlm.Hook = (*Hook)(nil)

// NewHook returns a Hook recording to the providers the options name, by
// default the global ones. It fails for a nil Option, or when the meter
// provider refuses to create an instrument.
func NewHook(opts ...Option) (*Hook, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("otel: nil Option")
		}
		o.apply(&c)
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	inst, err := newInstruments(c.meterProvider.Meter(ScopeName))
	if err != nil {
		return nil, fmt.Errorf("otel: creating instruments: %w", err)
	}
	return &Hook{tracer: c.tracerProvider.Tracer(ScopeName), inst: inst, waitingKey: c.waitingKey}, nil
}

// OnEvent records e: the span of the operation or attempt it reports, if
// any, and its measurements. It implements [dlm.Hook].
func (h *Hook) OnEvent(ctx context.Context, e *dlm.Event) {
	switch e.Kind {
	case dlm.EventAttempt:
		if errors.Is(e.Err, dlm.ErrNotObtained) {
			h.inst.contention.Add(ctx, 1)
		}
		h.span(ctx, spanAttempt, e)
	case dlm.EventWaiting:
		h.inst.wait(ctx, h.waitingKey, e.Key, 1)
	case dlm.EventObtained, dlm.EventNotObtained:
		if e.Waited {
			h.inst.wait(ctx, h.waitingKey, e.Key, -1)
		}
		h.inst.acquire.Record(ctx, e.Duration.Seconds(), h.inst.byOutcome(outcome(e)))
		if e.Kind == dlm.EventObtained {
			h.inst.grants.Add(ctx, 1)
		}
		h.span(ctx, spanLock, e)
	case dlm.EventExtended, dlm.EventExtendFailed:
		h.inst.extensions.Add(ctx, 1, h.inst.byOutcome(outcome(e)))
		h.span(ctx, spanExtend, e)
	case dlm.EventReleased:
		if e.Held > 0 {
			h.inst.hold.Record(ctx, e.Held.Seconds(), h.inst.byOutcome(outcome(e)))
		}
		h.span(ctx, spanUnlock, e)
	case dlm.EventDone:
		h.span(ctx, spanDo, e)
	case dlm.EventLost:
		h.inst.lost.Add(ctx, 1)
	case dlm.EventNodeError:
		h.inst.nodeError(ctx, e.Node, e.Op)
	case dlm.EventRenewal:
		o := outcomeOnTime
		if errors.Is(e.Err, dlm.ErrRenewalBehind) {
			o = outcomeBehind
		}
		h.inst.lag.Record(ctx, e.Duration.Seconds(), h.inst.byOutcome(o))
	}
}

// The values of the dlm.outcome attribute. Success has the name of the
// event: obtained, extended, released; a Do that returned nil is ok.
const (
	outcomeOK          = "ok"
	outcomeNotObtained = "not_obtained"
	outcomeLost        = "lost"
	outcomeUnavailable = "unavailable"
	outcomeCanceled    = "canceled"
	outcomeClosed      = "closed"
	outcomeError       = "error"
	// A round of auto-extensions started on time, or behind: late enough
	// that locks are at risk (dlm.ErrRenewalBehind).
	outcomeOnTime = "on_time"
	outcomeBehind = "behind"
)

// outcomes are every value of dlm.outcome, for the metrics' attribute sets.
var outcomes = []string{
	dlm.EventObtained.String(), dlm.EventExtended.String(), dlm.EventReleased.String(), outcomeOK,
	outcomeNotObtained, outcomeLost, outcomeUnavailable, outcomeCanceled, outcomeClosed, outcomeError,
	outcomeOnTime, outcomeBehind,
}

// outcome sums up how the operation e reports ended, in one of a few
// words fit for a metric attribute. A wait that its context ended, or
// Close, is canceled or closed, although its error also matches the
// outcome of its last attempt (dlm.ErrNotObtained, dlm.ErrUnavailable).
// Then the lock's own sentinels come: a vote that fell short for node
// timeouts also matches context.DeadlineExceeded.
func outcome(e *dlm.Event) string {
	switch err := e.Err; {
	case err == nil && e.Kind == dlm.EventDone:
		return outcomeOK
	case err == nil && e.Kind == dlm.EventAttempt:
		return dlm.EventObtained.String()
	case err == nil:
		return e.Kind.String()
	case outsideVote(err, context.Canceled), outsideVote(err, context.DeadlineExceeded):
		return outcomeCanceled
	case errors.Is(err, dlm.ErrClosed):
		return outcomeClosed
	case errors.Is(err, dlm.ErrNotObtained):
		return outcomeNotObtained
	case errors.Is(err, dlm.ErrLockLost):
		return outcomeLost
	case errors.Is(err, dlm.ErrUnavailable):
		return outcomeUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcomeCanceled
	}
	return outcomeError
}

// outsideVote reports whether err is target or wraps it other than through
// a *dlm.QuorumError, whose node timeouts match context.DeadlineExceeded
// while the caller's context is live.
func outsideVote(err, target error) bool {
	if _, ok := err.(*dlm.QuorumError); ok {
		return false
	}
	if err == target {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return u.Unwrap() != nil && outsideVote(u.Unwrap(), target)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if e != nil && outsideVote(e, target) {
				return true
			}
		}
	}
	return false
}
