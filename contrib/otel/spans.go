package otel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dlmgo/redlock/dlm"
)

// Span names.
const (
	spanLock    = "dlm.lock"
	spanAttempt = "dlm.lock.attempt"
	spanExtend  = "dlm.extend"
	spanUnlock  = "dlm.unlock"
	spanDo      = "dlm.do"
)

// Attribute keys of spans and metrics, and the span event of a node failure.
const (
	attrKey         = attribute.Key("dlm.key")
	attrOutcome     = attribute.Key("dlm.outcome")
	attrAttempts    = attribute.Key("dlm.attempts")
	attrFence       = attribute.Key("dlm.fence")
	attrVoteFor     = attribute.Key("dlm.vote.for")
	attrVoteAgainst = attribute.Key("dlm.vote.against")
	attrVoteFailed  = attribute.Key("dlm.vote.failed")
	attrNode        = attribute.Key("dlm.node")
	attrOp          = attribute.Key("dlm.op")
	attrError       = attribute.Key("dlm.error")

	eventNodeError = "dlm.node_error"
)

// span records the operation e reports as a span named name, a child of
// the span in ctx, over the operation's own time: events arrive once the
// operation is over, and carry its start and duration.
func (h *Hook) span(ctx context.Context, name string, e *dlm.Event) {
	end := e.Start.Add(e.Duration)
	_, span := h.tracer.Start(ctx, name,
		trace.WithTimestamp(e.Start),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrKey.String(e.Key)))
	if span.IsRecording() {
		annotate(span, e, end)
	}
	span.End(trace.WithTimestamp(end))
}

// annotate sets the attributes, node failures and status of the span of e,
// which ends at end.
func annotate(span trace.Span, e *dlm.Event, end time.Time) {
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attrOutcome.String(outcome(e)))
	if e.Kind == dlm.EventObtained || e.Kind == dlm.EventNotObtained {
		attrs = append(attrs, attrAttempts.Int(e.Attempts))
	}
	if e.Token > 0 {
		attrs = append(attrs, attrFence.Int64(int64(e.Token))) // below 2^53
	}
	forVotes, against, failed := e.For, e.Against, e.Failed
	var qerr *dlm.QuorumError
	if e.Kind == dlm.EventNotObtained && errors.As(e.Err, &qerr) {
		// The last attempt's vote, which decided the outcome.
		forVotes, against, failed = qerr.For, qerr.Against, qerr.Failed
	}
	if forVotes+against+failed > 0 {
		attrs = append(attrs, attrVoteFor.Int(forVotes), attrVoteAgainst.Int(against), attrVoteFailed.Int(failed))
	}
	span.SetAttributes(attrs...)
	for _, nerr := range e.NodeErrors {
		msg := ""
		if nerr.Err != nil {
			msg = nerr.Err.Error()
		}
		span.AddEvent(eventNodeError, trace.WithTimestamp(end), trace.WithAttributes(
			attrNode.String(nerr.Node), attrOp.String(e.Op), attrError.String(msg)))
	}
	if e.Err != nil {
		span.SetStatus(codes.Error, e.Err.Error())
	}
}
