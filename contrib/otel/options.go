package otel

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// An Option configures a [Hook] made by [NewHook].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tracerProvider trace.TracerProvider // nil: the global one
	meterProvider  metric.MeterProvider // nil: the global one
	waitingKey     func(string) string  // nil: dlm.waiting carries no key
}

// WithWaitingKeys gives the dlm.waiting gauge a dlm.key attribute: f(key)
// for the key of each waiting call ("" leaves the attribute off, counting
// the call with the unkeyed ones). Keys are often unbounded (one per order,
// per user), and every distinct value is a time series: f should map them
// to a bounded set, such as the keys worth a dashboard, or the part before
// an id. Without it (the default), dlm.waiting counts the waiting calls of
// the process, with no key.
func WithWaitingKeys(f func(key string) string) Option {
	return optionFunc(func(c *config) { c.waitingKey = f })
}

// WithTracerProvider sets where the hook's spans go (default: the global
// provider, otel.GetTracerProvider, as it is when [NewHook] is called; a
// global provider set later still receives the spans, since the default
// one delegates to it). A nil provider means the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithMeterProvider sets where the hook's metrics go (default: the global
// provider, otel.GetMeterProvider, which delegates to a global provider set
// later as the tracer provider does). A nil provider means the default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}
