package otel

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/leakcheck"

	_ "github.com/dlmgo/redlock/backends/goredis"
)

// TestMain fails the run if goroutines outlive the tests: the managers'
// clients, the example's servers.
func TestMain(m *testing.M) {
	snap := leakcheck.Take()
	code := m.Run()
	if code == 0 {
		if leaked := snap.Wait(5 * time.Second); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "goroutines left running after the tests:\n\n%s\n", strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// password is the nodes' password: it is in every node URL, and must never
// reach a span or a metric.
const password = "s3cret-pw"

// rig is a manager over three redis-server processes, with a Hook recording
// into an in-memory span recorder and a manual metric reader.
type rig struct {
	servers []*redistest.Server
	pace    redistest.Pace // measured through servers[0] as the rig opened
	m       *dlm.Manager
	tracer  trace.Tracer // for the test's own parent spans
	spans   *tracetest.SpanRecorder
	reader  *sdkmetric.ManualReader
}

func newRig(t *testing.T, opts ...dlm.ManagerOption) *rig {
	t.Helper()
	return newRigOn(t, redistest.StartServers(t, 3, redistest.WithArgs("--requirepass", password)), opts...)
}

// newRigOn is newRig over servers, started with the password.
func newRigOn(t *testing.T, servers []*redistest.Server, opts ...dlm.ManagerOption) *rig {
	t.Helper()
	return newRigHook(t, servers, nil, opts...)
}

// newRigHook is newRigOn with the hook made with hookOpts too.
func newRigHook(t *testing.T, servers []*redistest.Server, hookOpts []Option, opts ...dlm.ManagerOption) *rig {
	t.Helper()
	r := &rig{
		servers: servers,
		spans:   tracetest.NewSpanRecorder(),
		reader:  sdkmetric.NewManualReader(),
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	r.tracer = tp.Tracer("test")
	h, err := NewHook(append([]Option{WithTracerProvider(tp), WithMeterProvider(mp)}, hookOpts...)...)
	if err != nil {
		t.Fatalf("NewHook: %v", err)
	}
	urls := make([]string, len(r.servers))
	for i, s := range r.servers {
		urls[i] = "redis+goredis://:" + password + "@" + s.Addr()
	}
	// A node timeout far above a loaded machine's stalls under -race, and
	// at least the pace measured now needs: a killed node refuses
	// connections at once anyway.
	r.pace = redistest.MeasurePace(t, r.servers[0])
	t.Logf("pace %v: node timeout %v", r.pace, r.nodeTimeout(2*time.Second))
	opts = append([]dlm.ManagerOption{dlm.WithHook(h), dlm.WithNodeTimeout(r.nodeTimeout(2 * time.Second))}, opts...)
	r.m, err = dlm.Open(urls, opts...)
	if err != nil {
		t.Fatalf("dlm.Open: %v", err)
	}
	t.Cleanup(func() { r.m.Close() })
	return r
}

// nodeTimeout returns d stretched to the rig's pace ([redistest.Pace.Stretch]):
// a node timeout or a wait on the rig's servers of at least d.
func (r *rig) nodeTimeout(d time.Duration) time.Duration { return r.pace.Stretch(d) }

// named returns the ended spans called name, in the order they ended.
func (r *rig) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// names returns the names of the ended spans, in the order they ended.
func (r *rig) names() []string {
	var out []string
	for _, s := range r.spans.Ended() {
		out = append(out, s.Name())
	}
	return out
}

// one returns the only ended span called name, failing t if there is not
// exactly one.
func (r *rig) one(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := r.named(name)
	if len(got) != 1 {
		t.Fatalf("%d %s spans (all: %v); want 1", len(got), name, r.names())
	}
	return got[0]
}

// collect reads the metrics recorded so far.
func (r *rig) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return rm
}

// findMetric returns the metric called name, and whether it was recorded.
func findMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// matches reports whether set holds every attribute of want.
func matches(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// count returns the total of the counter called name over the data points
// that have the attributes want.
func count(t *testing.T, rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := findMetric(rm, name)
	if !ok {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("metric %s is a %T; want a Sum[int64]", name, m.Data)
	}
	var n int64
	for _, dp := range sum.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

// histogram returns the data points of the acquire histogram with the
// attributes want.
func histogram(t *testing.T, rm metricdata.ResourceMetrics, want ...attribute.KeyValue) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	return histogramOf(t, rm, metricAcquire, want...)
}

// histogramOf returns the data points of the histogram called name with
// the attributes want.
func histogramOf(t *testing.T, rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := findMetric(rm, name)
	if !ok {
		return nil
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("metric %s is a %T; want a Histogram[float64]", name, m.Data)
	}
	if m.Unit != "s" {
		t.Errorf("metric %s has unit %q; want s", name, m.Unit)
	}
	var out []metricdata.HistogramDataPoint[float64]
	for _, dp := range h.DataPoints {
		if matches(dp.Attributes, want) {
			out = append(out, dp)
		}
	}
	return out
}

// attr returns the attribute key of span s, or an invalid value.
func attr(s sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// wantAttrs checks attributes of span s, given as key and value pairs, the
// values as Emit prints them.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, kvs ...string) {
	t.Helper()
	for i := 0; i+1 < len(kvs); i += 2 {
		if got := attr(s, attribute.Key(kvs[i])); got.Emit() != kvs[i+1] {
			t.Errorf("span %s: %s = %q; want %q", s.Name(), kvs[i], got.Emit(), kvs[i+1])
		}
	}
}

// wantChildOf checks that span s is a child of parent.
func wantChildOf(t *testing.T, s sdktrace.ReadOnlySpan, parent trace.Span) {
	t.Helper()
	p := parent.SpanContext()
	if s.Parent().SpanID() != p.SpanID() || s.SpanContext().TraceID() != p.TraceID() {
		t.Errorf("span %s has parent %v in trace %v; want %v in trace %v",
			s.Name(), s.Parent().SpanID(), s.SpanContext().TraceID(), p.SpanID(), p.TraceID())
	}
}

// wantNoSecret fails t if any secret appears in a span's name, attributes,
// events or status, or in a metric's attributes.
func (r *rig) wantNoSecret(t *testing.T, secrets ...string) {
	t.Helper()
	var texts []string
	kvs := func(where string, attrs []attribute.KeyValue) {
		for _, kv := range attrs {
			texts = append(texts, where+" "+string(kv.Key)+"="+kv.Value.Emit())
		}
	}
	for _, s := range r.spans.Ended() {
		texts = append(texts, s.Name()+" status: "+s.Status().Description)
		kvs(s.Name(), s.Attributes())
		for _, e := range s.Events() {
			texts = append(texts, s.Name()+" event "+e.Name)
			kvs(s.Name()+" event "+e.Name, e.Attributes)
		}
	}
	rm := r.collect(t)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					kvs(m.Name, dp.Attributes.ToSlice())
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					kvs(m.Name, dp.Attributes.ToSlice())
				}
			default:
				t.Errorf("metric %s is a %T, not checked for secrets", m.Name, m.Data)
			}
		}
	}
	if len(texts) == 0 {
		t.Fatal("nothing recorded to check for secrets")
	}
	for _, text := range texts {
		for _, secret := range secrets {
			if secret == "" {
				t.Fatal("wantNoSecret: empty secret")
			}
			if strings.Contains(text, secret) {
				t.Errorf("secret %q recorded: %s", secret, text)
			}
		}
	}
}
