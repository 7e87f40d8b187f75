package otel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dlmgo/redlock/dlm"
)

// TestLockExtendUnlock checks the spans of a lock's life: each a child of
// the caller's span, over the operation's real time, with its attributes;
// and the acquire histogram's sample.
func TestLockExtendUnlock(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, parent := r.tracer.Start(context.Background(), "request")
	before := time.Now()
	l, err := r.m.Lock(ctx, "orders", dlm.WithFencing())
	if err != nil {
		t.Fatal(err)
	}
	secret := l.Handle().Secret
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	parent.End()

	want := []string{spanAttempt, spanLock, spanExtend, spanUnlock, "request"}
	if got := r.names(); !slices.Equal(got, want) {
		t.Fatalf("spans = %v; want %v", got, want)
	}
	fence := fmt.Sprint(l.Token())
	if l.Token() == 0 {
		t.Fatal("Token() = 0 with WithFencing")
	}
	lock, extend, unlock := r.one(t, spanLock), r.one(t, spanExtend), r.one(t, spanUnlock)
	wantAttrs(t, lock, "dlm.key", "orders", "dlm.outcome", "obtained", "dlm.attempts", "1", "dlm.fence", fence)
	wantAttrs(t, r.one(t, spanAttempt), "dlm.key", "orders", "dlm.outcome", "obtained", "dlm.fence", fence)
	wantAttrs(t, extend, "dlm.key", "orders", "dlm.outcome", "extended", "dlm.fence", fence)
	// Unlock waits for every node: its vote is complete.
	wantAttrs(t, unlock, "dlm.key", "orders", "dlm.outcome", "released",
		"dlm.vote.for", "3", "dlm.vote.against", "0", "dlm.vote.failed", "0", "dlm.fence", fence)
	// Lock returns at a quorum, so the third node's grant may land after
	// the extension reached it: that node may vote against.
	if n, against := attr(extend, attrVoteFor).AsInt64(), attr(extend, attrVoteAgainst).AsInt64(); n < 2 || n+against > 3 {
		t.Errorf("extend span: dlm.vote.for = %d, against = %d; want a quorum, 2 or 3, and at most 3 votes", n, against)
	}

	// Spans show when each operation ran, one after the other.
	prevEnd := before
	for _, s := range []sdktrace.ReadOnlySpan{lock, extend, unlock} {
		wantChildOf(t, s, parent)
		if s.Status().Code != codes.Unset {
			t.Errorf("span %s has status %v; want unset", s.Name(), s.Status())
		}
		if s.StartTime().Before(prevEnd) || s.EndTime().Before(s.StartTime()) || s.EndTime().After(after) {
			t.Errorf("span %s runs %v to %v after the test began, ending %v; want in order, within the %v the calls took",
				s.Name(), s.StartTime().Sub(before), s.EndTime().Sub(before), after.Sub(before), after.Sub(before))
		}
		prevEnd = s.EndTime()
	}

	rm := r.collect(t)
	dps := histogram(t, rm, attrOutcome.String("obtained"))
	if len(dps) != 1 || dps[0].Count != 1 || !slices.Equal(dps[0].Bounds, acquireBuckets) {
		t.Fatalf("acquire histogram for obtained = %+v; want one sample in the hook's buckets", dps)
	}
	if took := lock.EndTime().Sub(lock.StartTime()).Seconds(); dps[0].Sum != took {
		t.Errorf("acquire histogram sum = %vs; want the lock span's %vs", dps[0].Sum, took)
	}
	for name, want := range map[string]int64{metricGrants: 1, metricContention: 0, metricLost: 0, metricNodeErrors: 0} {
		if got := count(t, rm, name); got != want {
			t.Errorf("%s = %d; want %d", name, got, want)
		}
	}
	if got := count(t, rm, metricExtensions, attrOutcome.String("extended")); got != 1 {
		t.Errorf("%s{extended} = %d; want 1", metricExtensions, got)
	}
	r.wantNoSecret(t, secret, password)
}

// TestContention checks a TryLock and a Lock on a held key: their spans
// fail with the vote, and the metrics count the contention.
func TestContention(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	held, err := r.m.Lock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.TryLock(ctx, "k"); !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryLock on a held key = %v; want ErrNotObtained", err)
	}
	if _, err := r.m.Lock(ctx, "k", dlm.WithRetry(3, dlm.FixedBackoff(time.Millisecond))); !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("Lock on a held key, 3 tries = %v; want ErrNotObtained", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	locks := r.named(spanLock)
	if len(locks) != 3 {
		t.Fatalf("%d lock spans; want 3 (all: %v)", len(locks), r.names())
	}
	for i, s := range locks[1:] {
		wantAttrs(t, s, "dlm.key", "k", "dlm.outcome", "not_obtained", "dlm.attempts", []string{"1", "3"}[i])
		if s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "not obtained") {
			t.Errorf("span %s status = %v; want an error saying not obtained", s.Name(), s.Status())
		}
		if n := attr(s, attrVoteAgainst).AsInt64(); n < 2 {
			t.Errorf("failed lock span: dlm.vote.against = %d; want a quorum, 2 or 3", n)
		}
		if s.Parent().IsValid() {
			t.Errorf("span %s has a parent with no span in the caller's context", s.Name())
		}
	}
	var failed int
	for _, s := range r.named(spanAttempt) {
		if attr(s, attrOutcome).AsString() == "not_obtained" {
			failed++
		}
	}
	if failed != 4 {
		t.Errorf("%d attempt spans not obtained; want 4 (1 TryLock + 3 Lock)", failed)
	}

	rm := r.collect(t)
	if got := count(t, rm, metricContention); got != 4 {
		t.Errorf("%s = %d; want 4", metricContention, got)
	}
	if got := count(t, rm, metricGrants); got != 1 {
		t.Errorf("%s = %d; want 1", metricGrants, got)
	}
	for outcome, want := range map[string]uint64{"obtained": 1, "not_obtained": 2} {
		var n uint64
		for _, dp := range histogram(t, rm, attrOutcome.String(outcome)) {
			n += dp.Count
		}
		if n != want {
			t.Errorf("acquire histogram{%s} has %d samples; want %d", outcome, n, want)
		}
	}
	r.wantNoSecret(t, held.Handle().Secret, password)
}

// TestLockAll checks that a multi-key lock's spans name its keys, sorted.
func TestLockAll(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	l, err := r.m.LockAll(ctx, []string{"b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{spanAttempt, spanLock, spanUnlock} {
		wantAttrs(t, r.one(t, name), "dlm.key", "a,b")
	}
	wantAttrs(t, r.one(t, spanLock), "dlm.outcome", "obtained", "dlm.attempts", "1")
	r.wantNoSecret(t, l.Handle().Secret, password)
}

// TestNodeKilled checks that a dead node's failures become span events and
// metrics naming its address, and never its password.
func TestNodeKilled(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, parent := r.tracer.Start(context.Background(), "request")
	dead := r.servers[2].Addr()
	r.servers[2].Kill()

	l, err := r.m.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock with 2 of 3 nodes up = %v; want it obtained", err)
	}
	secret := l.Handle().Secret
	// Unlock waits for every node, so the dead one's failure is certain to
	// be in its vote.
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	unlock := r.one(t, spanUnlock)
	wantChildOf(t, unlock, parent)
	wantAttrs(t, unlock, "dlm.outcome", "released", "dlm.vote.for", "2", "dlm.vote.failed", "1")
	if unlock.Status().Code != codes.Unset {
		t.Errorf("unlock span status = %v; want unset: a quorum released it", unlock.Status())
	}
	events := unlock.Events()
	if len(events) != 1 || events[0].Name != eventNodeError {
		t.Fatalf("unlock span events = %+v; want one %s", events, eventNodeError)
	}
	var node, op, msg string
	for _, kv := range events[0].Attributes {
		switch kv.Key {
		case attrNode:
			node = kv.Value.AsString()
		case attrOp:
			op = kv.Value.AsString()
		case attrError:
			msg = kv.Value.AsString()
		}
	}
	if node != dead || op != "unlock" || msg == "" {
		t.Errorf("node error event: node %q, op %q, error %q; want %s, unlock, the failure", node, op, msg, dead)
	}
	if !events[0].Time.Equal(unlock.EndTime()) {
		t.Errorf("node error event at %v; want at the end of the vote, %v", events[0].Time, unlock.EndTime())
	}

	// Two nodes down: no quorum, and the attempt's vote counts both.
	r.servers[1].Kill()
	if _, err := r.m.TryLock(ctx, "k2"); !errors.Is(err, dlm.ErrUnavailable) {
		t.Fatalf("TryLock with 1 of 3 nodes up = %v; want ErrUnavailable", err)
	}
	parent.End()
	lock := r.named(spanLock)[1]
	wantAttrs(t, lock, "dlm.key", "k2", "dlm.outcome", "unavailable", "dlm.vote.failed", "2")
	if lock.Status().Code != codes.Error {
		t.Errorf("lock span status = %v; want an error", lock.Status())
	}
	attempts := r.named(spanAttempt)
	var nodes []string
	for _, e := range attempts[len(attempts)-1].Events() {
		for _, kv := range e.Attributes {
			if kv.Key == attrNode {
				nodes = append(nodes, kv.Value.AsString())
			}
		}
	}
	if want := []string{r.servers[1].Addr(), dead}; !slices.Equal(nodes, want) {
		t.Errorf("failed attempt's node errors name %v; want %v", nodes, want)
	}

	rm := r.collect(t)
	if got := count(t, rm, metricNodeErrors, attrNode.String(dead), attrOp.String("unlock")); got != 1 {
		t.Errorf("%s{node %s, unlock} = %d; want 1", metricNodeErrors, dead, got)
	}
	if got := count(t, rm, metricNodeErrors, attrNode.String(r.servers[1].Addr()), attrOp.String("lock")); got != 1 {
		t.Errorf("%s{node %s, lock} = %d; want 1", metricNodeErrors, r.servers[1].Addr(), got)
	}
	if got := count(t, rm, metricNodeErrors, attrNode.String(r.servers[0].Addr())); got != 0 {
		t.Errorf("%s{live node %s} = %d; want 0", metricNodeErrors, r.servers[0].Addr(), got)
	}
	r.wantNoSecret(t, secret, password)
}

// TestLostLock checks a Do whose lock is lost while fn runs: every node
// forgets it. The loss is counted, and the Do span fails. When the loss is
// found (the next extension) and fn cancelled is proven on virtual time in
// package dlm: TestAutoExtendQuorumGone, TestDoLockLost.
//
// The Do's node timeout is stretched to the pace measured on the run, and
// its TTL is at least two of them. A run in which an extension came before
// the flush, or timed out, shows more than one extension: it cannot tell a
// slow machine from a broken hook, is inconclusive, and runs again with
// twice the node timeout and TTL, up to lostRuns runs.
func TestLostLock(t *testing.T) {
	t.Parallel()
	var (
		r      *rig
		parent trace.Span
		secret string
		err    error
	)
	for run, scale := 1, time.Duration(1); ; run, scale = run+1, 2*scale {
		r = newRig(t)
		var ctx context.Context
		ctx, parent = r.tracer.Start(context.Background(), "job")
		nodeTimeout := scale * r.nodeTimeout(500*time.Millisecond)
		ttl := max(scale*time.Second, 2*nodeTimeout) // the node timeout below the TTL
		t.Logf("run %d: TTL %v, node timeout %v", run, ttl, nodeTimeout)
		err = r.m.Do(ctx, "nightly", func(ctx context.Context) error {
			secret = dlm.LockFromContext(ctx).Handle().Secret
			// The grant's request to the slowest node may still be under
			// way: let it land first, or it would set the key again after
			// the flush.
			for deadline := time.Now().Add(r.nodeTimeout(5 * time.Second)); ; time.Sleep(2 * time.Millisecond) {
				held := 0
				for _, s := range r.servers {
					if v, err := s.Do("EXISTS", "redlock:{nightly}"); err == nil && v == int64(1) {
						held++
					}
				}
				if held == len(r.servers) || time.Now().After(deadline) {
					break
				}
			}
			for _, s := range r.servers {
				if _, err := s.Do("FLUSHALL"); err != nil {
					return err
				}
			}
			<-ctx.Done() // the next extension finds the lock gone
			return nil
		}, dlm.WithTTL(ttl), dlm.WithNodeTimeout(nodeTimeout))
		parent.End()
		extends := r.named(spanExtend)
		if len(extends) < 2 || attr(extends[0], attrOutcome).Emit() == "lost" {
			break
		}
		why := fmt.Sprintf("%d extensions, the first %q: one came before the flush or timed out", len(extends), attr(extends[0], attrOutcome).Emit())
		if run == lostRuns {
			t.Fatalf("inconclusive %d times: %s", run, why)
		}
		t.Logf("inconclusive: %s; running again with twice the node timeout and TTL", why)
	}
	if !errors.Is(err, dlm.ErrLockLost) {
		t.Fatalf("Do whose lock every node forgot = %v; want ErrLockLost", err)
	}

	want := []string{spanAttempt, spanLock, spanExtend, spanUnlock, spanDo, "job"}
	if got := r.names(); !slices.Equal(got, want) {
		t.Fatalf("spans = %v; want %v", got, want)
	}
	do := r.one(t, spanDo)
	wantChildOf(t, do, parent)
	wantAttrs(t, do, "dlm.key", "nightly", "dlm.outcome", "lost")
	if do.Status().Code != codes.Error || !strings.Contains(do.Status().Description, "lock lost") {
		t.Errorf("do span status = %v; want an error saying the lock was lost", do.Status())
	}
	lock, unlock := r.one(t, spanLock), r.one(t, spanUnlock)
	if do.StartTime().After(lock.StartTime()) || do.EndTime().Before(unlock.EndTime()) {
		t.Errorf("do span runs %v to %v; want it to cover the lock (from %v) and the unlock (to %v)",
			do.StartTime(), do.EndTime(), lock.StartTime(), unlock.EndTime())
	}
	wantAttrs(t, r.one(t, spanExtend), "dlm.outcome", "lost", "dlm.vote.for", "0")
	wantAttrs(t, unlock, "dlm.outcome", "lost")

	rm := r.collect(t)
	if got := count(t, rm, metricLost); got != 1 {
		t.Errorf("%s = %d; want 1", metricLost, got)
	}
	if got := count(t, rm, metricExtensions, attrOutcome.String("lost")); got != 1 {
		t.Errorf("%s{lost} = %d; want 1", metricExtensions, got)
	}
	r.wantNoSecret(t, secret, password)
}

// lostRuns is how many runs TestLostLock and TestRenewalLag make at most
// before they give up on a machine too slow.
const lostRuns = 3

// TestDefaultProviders checks that with no options the hook records to the
// global providers.
func TestDefaultProviders(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer tp.Shutdown(context.Background())
	defer mp.Shutdown(context.Background())
	// The other tests name their providers; nothing else reads the globals.
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)

	h, err := NewHook()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h.OnEvent(context.Background(), &dlm.Event{Kind: dlm.EventObtained, Op: "lock", Key: "k", Start: start, Duration: time.Millisecond, Attempts: 1})
	if got := spans.Ended(); len(got) != 1 || got[0].Name() != spanLock || got[0].InstrumentationScope().Name != ScopeName {
		t.Errorf("global tracer provider got %v; want one %s span of scope %s", got, spanLock, ScopeName)
	}
	r := &rig{reader: reader}
	rm := r.collect(t)
	if got := count(t, rm, metricGrants); got != 1 {
		t.Errorf("global meter provider: %s = %d; want 1", metricGrants, got)
	}
	if len(rm.ScopeMetrics) != 1 || rm.ScopeMetrics[0].Scope.Name != ScopeName {
		t.Errorf("metrics scopes = %+v; want only %s", rm.ScopeMetrics, ScopeName)
	}
}

func TestNilOption(t *testing.T) {
	t.Parallel()
	if h, err := NewHook(nil); err == nil || h != nil {
		t.Errorf("NewHook(nil) = %v, %v; want an error", h, err)
	}
}

// TestOutcome checks the outcome of each kind of event and error.
func TestOutcome(t *testing.T) {
	t.Parallel()
	notObtained := fmt.Errorf("dlm: gave up after 3 attempts: %w", dlm.ErrNotObtained)
	for _, tc := range []struct {
		kind dlm.EventKind
		err  error
		want string
	}{
		{dlm.EventAttempt, nil, "obtained"},
		{dlm.EventObtained, nil, "obtained"},
		{dlm.EventExtended, nil, "extended"},
		{dlm.EventReleased, nil, "released"},
		{dlm.EventDone, nil, "ok"},
		{dlm.EventNotObtained, notObtained, "not_obtained"},
		{dlm.EventNotObtained, fmt.Errorf("dlm: lock: stopped waiting: %w", context.DeadlineExceeded), "canceled"},
		{dlm.EventNotObtained, context.Canceled, "canceled"},
		{dlm.EventNotObtained, fmt.Errorf("dlm: lock: stopped waiting: %w; last: %w", context.Canceled, &dlm.QuorumError{Op: "lock", Nodes: 3, Quorum: 2, Against: 2}), "canceled"},
		{dlm.EventNotObtained, fmt.Errorf("dlm: lock: stopped waiting: %w; last: %w", context.DeadlineExceeded, &dlm.QuorumError{Op: "lock", Nodes: 3, Quorum: 2, Failed: 2, Err: context.DeadlineExceeded}), "canceled"},
		{dlm.EventNotObtained, fmt.Errorf("dlm: lock: stopped waiting: %w; last: %w", dlm.ErrClosed, &dlm.QuorumError{Op: "lock", Nodes: 3, Quorum: 2, Against: 2}), "closed"},
		{dlm.EventNotObtained, dlm.ErrClosed, "closed"},
		{dlm.EventNotObtained, &dlm.QuorumError{Op: "lock", Nodes: 3, Quorum: 2, Failed: 2, Err: context.DeadlineExceeded}, "unavailable"},
		{dlm.EventNotObtained, &dlm.QuorumError{Op: "lock", Nodes: 3, Quorum: 2, Against: 1, Failed: 1, Err: context.DeadlineExceeded}, "not_obtained"},
		{dlm.EventExtendFailed, &dlm.QuorumError{Op: "extend", Nodes: 3, Quorum: 2, Against: 2}, "lost"},
		{dlm.EventReleased, dlm.ErrLockLost, "lost"},
		{dlm.EventDone, errors.Join(errors.New("work failed"), dlm.ErrLockLost), "lost"},
		{dlm.EventDone, errors.New("work failed"), "error"},
	} {
		if got := outcome(&dlm.Event{Kind: tc.kind, Err: tc.err}); got != tc.want {
			t.Errorf("outcome(%v, %v) = %q; want %q", tc.kind, tc.err, got, tc.want)
		}
		if !slices.Contains(outcomes, tc.want) {
			t.Errorf("outcome %q is missing from outcomes: its measurements would carry no attribute", tc.want)
		}
	}
}

// TestNotRecording checks that with a tracer that samples nothing every
// kind of event still reaches the metrics, and no span is recorded.
func TestNotRecording(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	r := &rig{reader: sdkmetric.NewManualReader()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	defer mp.Shutdown(context.Background())
	h, err := NewHook(WithTracerProvider(tp), WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	for k := dlm.EventAttempt; k <= dlm.EventDone; k++ {
		h.OnEvent(context.Background(), &dlm.Event{Kind: k, Op: "lock", Key: "k", Node: "n:1", Start: time.Now(), Err: dlm.ErrNotObtained,
			NodeErrors: []*dlm.NodeError{{Node: "n:1", Err: errors.New("refused")}}})
	}
	if got := len(spans.Started()) + len(spans.Ended()); got != 0 {
		t.Errorf("%d spans recorded with NeverSample; want 0", got)
	}
	rm := r.collect(t)
	for name, want := range map[string]int64{metricContention: 1, metricLost: 1, metricNodeErrors: 1, metricExtensions: 2} {
		if got := count(t, rm, name); got != want {
			t.Errorf("%s = %d; want %d", name, got, want)
		}
	}
	if n := len(histogram(t, rm, attrOutcome.String("not_obtained"))); n != 1 {
		t.Errorf("acquire histogram has %d not_obtained points; want 1", n)
	}
}

// TestStoppedWaitMeasured checks that a Lock that stopped waiting when its
// context ended is measured and traced like any other: the hook gets the
// operation's context without its end, under which the metrics SDK would
// drop the measurement.
func TestStoppedWaitMeasured(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	holder, err := r.m.TryLock(context.Background(), "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(context.Background())
	ctx, parent := r.tracer.Start(context.Background(), "request")
	// The wait is long enough for an attempt or two at the rig's pace;
	// its end, not the attempts, stops the Lock.
	wait, cancel := context.WithTimeout(ctx, r.nodeTimeout(300*time.Millisecond))
	defer cancel()
	if _, err := r.m.Lock(wait, "busy"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held key bounded by its context = %v; want context.DeadlineExceeded", err)
	}
	parent.End()
	locks := r.named(spanLock) // the holder's, then the stopped wait's
	if len(locks) != 2 {
		t.Fatalf("%d %s spans (all: %v); want the holder's and the stopped wait's", len(locks), spanLock, r.names())
	}
	wantChildOf(t, locks[1], parent)
	wantAttrs(t, locks[1], "dlm.outcome", "canceled")
	var n uint64
	for _, dp := range histogram(t, r.collect(t), attrOutcome.String("canceled")) {
		n += dp.Count
	}
	if n != 1 {
		t.Errorf("%s{canceled} has %d samples; want the stopped wait's 1", metricAcquire, n)
	}
}

// TestRenewalLag checks the renewal lag histogram: each round of a
// manager's auto-extensions records how late it started, on time while the
// process keeps up, and behind for a round the manager reports behind.
//
// On redis-server it checks that rounds are recorded, on time; whether a
// round is on time or behind is a matter of when, proven on virtual time in
// package dlm (TestRenewalOnTimeReported, TestRenewalBehindReported). A run
// whose only rounds were behind had a process short of CPU: it is
// inconclusive, and runs again with twice the TTL (a round's margin grows
// with it), up to lostRuns runs. The wait for the first extension is a hang
// guard, stretched to the pace.
func TestRenewalLag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for run, ttl := 1, 3*time.Second; ; run, ttl = run+1, 2*ttl {
		r := newRig(t, dlm.WithTTL(ttl))
		l, err := r.m.Lock(ctx, "renewed", dlm.WithAutoExtend(dlm.AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		first := l.Until()
		bound := r.nodeTimeout(max(10*time.Second, 3*ttl))
		for deadline := time.Now().Add(bound); !l.Until().After(first); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no auto-extension within %v (TTL %v)", bound, ttl)
			}
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		rm := r.collect(t)
		dps := histogramOf(t, rm, metricRenewalLag, attrOutcome.String(outcomeOnTime))
		if len(dps) == 0 && len(histogramOf(t, rm, metricRenewalLag, attrOutcome.String(outcomeBehind))) > 0 {
			if run == lostRuns {
				t.Fatalf("inconclusive %d times: every round behind, the last with a TTL of %v", run, ttl)
			}
			t.Logf("inconclusive: every round with a TTL of %v started behind; running again with twice the TTL", ttl)
			continue
		}
		if len(dps) != 1 || dps[0].Count < 1 || !slices.Equal(dps[0].Bounds, lagBuckets) {
			t.Fatalf("%s{on_time} = %+v; want a sample per round in the hook's buckets", metricRenewalLag, dps)
		}
		break
	}

	reader := sdkmetric.NewManualReader()
	h, err := NewHook(WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	h.OnEvent(ctx, &dlm.Event{Kind: dlm.EventRenewal, Op: "extend", Duration: 300 * time.Millisecond, For: 12,
		Err: fmt.Errorf("%w: 3 of the 12 extensions of a round started after half their margin", dlm.ErrRenewalBehind)})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	dps := histogramOf(t, rm, metricRenewalLag, attrOutcome.String(outcomeBehind))
	if len(dps) != 1 || dps[0].Count != 1 || dps[0].Sum != 0.3 {
		t.Errorf("%s{behind} = %+v; want one sample of 0.3s", metricRenewalLag, dps)
	}
}
