package otel_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/alicebob/miniredis/v2"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dlmgo/redlock/dlm"

	_ "github.com/dlmgo/redlock/backends/goredis"

	dlmotel "github.com/dlmgo/redlock/contrib/otel"
)

// The hook goes to dlm.WithHook. Here the spans and metrics are kept in
// memory and printed; a service passes its own providers, with their
// exporters, or none to use the global ones (otel.SetTracerProvider and
// otel.SetMeterProvider).
func ExampleNewHook() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	hook, err := dlmotel.NewHook(dlmotel.WithTracerProvider(tp), dlmotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	urls, stop := startNodes(3)
	defer stop()
	m, err := dlm.Open(urls, dlm.WithHook(hook))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	ctx := context.Background() // a request's context carries its span
	err = m.Do(ctx, "nightly-report", func(ctx context.Context) error {
		return nil // the work the lock protects
	})
	if err != nil {
		log.Fatal(err)
	}

	for _, s := range spans.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "dlm.outcome" {
				fmt.Println(s.Name(), kv.Value.AsString())
			}
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
		}
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// dlm.lock.attempt obtained
	// dlm.lock obtained
	// dlm.unlock released
	// dlm.do ok
	// [dlm.acquire.duration dlm.grants dlm.hold.duration dlm.waiting]
}

// startNodes starts n in-process Redis stand-ins and returns their URLs,
// and a function that stops them.
func startNodes(n int) (urls []string, stop func()) {
	var servers []*miniredis.Miniredis
	stop = func() {
		for _, s := range servers {
			s.Close()
		}
	}
	for range n {
		s, err := miniredis.Run()
		if err != nil {
			stop()
			log.Fatal(err)
		}
		servers = append(servers, s)
		urls = append(urls, "redis+goredis://"+s.Addr())
	}
	return urls, stop
}
