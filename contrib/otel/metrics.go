package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names.
const (
	metricAcquire    = "dlm.acquire.duration"
	metricGrants     = "dlm.grants"
	metricContention = "dlm.contention"
	metricLost       = "dlm.lost"
	metricExtensions = "dlm.extensions"
	metricNodeErrors = "dlm.node.errors"
	metricRenewalLag = "dlm.renewal.lag"
	metricHold       = "dlm.hold.duration"
	metricWaiting    = "dlm.waiting"
)

// holdBuckets are the bounds of the hold histogram, in seconds: from a
// short critical section to a job of hours.
var holdBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400}

// acquireBuckets are the bounds of the acquire histogram, in seconds: from
// a round trip on a local network to a long wait for a busy lock.
var acquireBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// lagBuckets are the bounds of the renewal lag histogram, in seconds: from
// on time, within a millisecond, to late enough to lose locks of any TTL
// but a long one.
var lagBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// instruments are the hook's metrics.
type instruments struct {
	acquire    metric.Float64Histogram
	grants     metric.Int64Counter
	contention metric.Int64Counter
	lost       metric.Int64Counter
	extensions metric.Int64Counter
	nodeErrors metric.Int64Counter
	lag        metric.Float64Histogram
	hold       metric.Float64Histogram
	waiting    metric.Int64UpDownCounter
	// outcomeSets holds the attribute set of each outcome, made once.
	outcomeSets map[string]metric.MeasurementOption
}

func newInstruments(meter metric.Meter) (instruments, error) {
	var in instruments
	var errs [9]error
	in.acquire, errs[0] = meter.Float64Histogram(metricAcquire, metric.WithUnit("s"),
		metric.WithDescription("Time Lock, TryLock, LockAll and TryLockAll took, by outcome, waits between attempts included."),
		metric.WithExplicitBucketBoundaries(acquireBuckets...))
	in.grants, errs[1] = meter.Int64Counter(metricGrants, metric.WithUnit("{lock}"),
		metric.WithDescription("Locks obtained."))
	in.contention, errs[2] = meter.Int64Counter(metricContention, metric.WithUnit("{attempt}"),
		metric.WithDescription("Acquire attempts that failed because another holder had the lock."))
	in.lost, errs[3] = meter.Int64Counter(metricLost, metric.WithUnit("{lock}"),
		metric.WithDescription("Locks known lost before they were released."))
	in.extensions, errs[4] = meter.Int64Counter(metricExtensions, metric.WithUnit("{extension}"),
		metric.WithDescription("Extensions of held locks, by outcome: extended, or why they failed."))
	in.nodeErrors, errs[5] = meter.Int64Counter(metricNodeErrors, metric.WithUnit("{error}"),
		metric.WithDescription("Failed requests to one node, by node address and operation."))
	in.lag, errs[6] = meter.Float64Histogram(metricRenewalLag, metric.WithUnit("s"),
		metric.WithDescription("How late each round of auto-extensions started, for its most overdue extension, by outcome: on time, or behind (locks at risk)."),
		metric.WithExplicitBucketBoundaries(lagBuckets...))
	in.hold, errs[7] = meter.Float64Histogram(metricHold, metric.WithUnit("s"),
		metric.WithDescription("How long locks were held, from the return of the call that took them to Unlock, by outcome: released, or lost before."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	in.waiting, errs[8] = meter.Int64UpDownCounter(metricWaiting, metric.WithUnit("{call}"),
		metric.WithDescription("Calls of this process waiting for a lock (Lock, Do, RLock, Acquire, Campaign); by key with WithWaitingKeys."))
	in.outcomeSets = make(map[string]metric.MeasurementOption, len(outcomes))
	for _, o := range outcomes {
		in.outcomeSets[o] = metric.WithAttributeSet(attribute.NewSet(attrOutcome.String(o)))
	}
	return in, errors.Join(errs[:]...)
}

// byOutcome returns the attributes of a measurement of outcome o.
func (in *instruments) byOutcome(o string) metric.MeasurementOption {
	return in.outcomeSets[o]
}

// wait counts one call of this process that began (n 1) or ended (n -1)
// waiting for key, under the attribute keyOf gives it, if any.
func (in *instruments) wait(ctx context.Context, keyOf func(string) string, key string, n int64) {
	if keyOf != nil {
		if k := keyOf(key); k != "" {
			in.waiting.Add(ctx, n, metric.WithAttributes(attrKey.String(k)))
			return
		}
	}
	in.waiting.Add(ctx, n)
}

// nodeError counts one failed request of operation op to node.
func (in *instruments) nodeError(ctx context.Context, node, op string) {
	in.nodeErrors.Add(ctx, 1, metric.WithAttributes(attrNode.String(node), attrOp.String(op)))
}
