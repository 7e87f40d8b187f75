// Command otel shows the OpenTelemetry spans and metrics that
// github.com/dlmgo/redlock/contrib/otel records. It starts 3 miniredis
// servers inside this process, opens a manager over them with the hook, and
// plays four scenes, printing each span as it ends with the stdout trace
// exporter:
//
//  1. Lock, Extend and Unlock inside the application's span "checkout": the
//     spans dlm.lock.attempt, dlm.lock, dlm.extend and dlm.unlock, children
//     of checkout, each over the time its operation took.
//  2. A TryLock on a lock held by someone else: a dlm.lock span whose outcome
//     is not_obtained, with the nodes' vote, counted by dlm.contention.
//  3. A node killed: locks are still obtained on 2 of 3 nodes, and the span
//     of the unlock has a dlm.node_error event naming the dead node, counted
//     by dlm.node.errors.
//  4. A Do whose lock every node forgets while its function runs: the
//     extension finds the lock gone, dlm.lost counts it, and the dlm.do span
//     ends with an error.
//
// It then prints the metrics with the stdout metric exporter. Run it from
// the examples directory with `go run ./otel`. The program checks each
// scene's outcome and exits with status 1 if one differs.
//
// miniredis is a stand-in for demos and tests, not a Redis to lock on in
// production: it lives in the process that takes the locks.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	dlmotel "github.com/dlmgo/redlock/contrib/otel"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/examples/internal/embedded"

	_ "github.com/dlmgo/redlock/backends/goredis"
)

const nodes = 3

// timing is the demo's clock.
type timing struct {
	// nodeTimeout bounds the requests of scenes 1 to 3. The default node
	// timeout for their TTL is too short for a loaded machine running the
	// test under -race; the embedded nodes answer at once, and a killed one
	// refuses connections at once.
	nodeTimeout time.Duration
	// lostTTL is the TTL of the lock scene 4 loses: its first extension,
	// which finds the lock gone, comes when a third of it is left. Its
	// node timeout, lostNodeTimeout, must be below it.
	lostTTL         time.Duration
	lostNodeTimeout time.Duration
}

// demoTiming is the timing the demo runs with.
var demoTiming = timing{nodeTimeout: time.Second, lostTTL: 600 * time.Millisecond, lostNodeTimeout: 600 * time.Millisecond / 3}

// withNodeTimeout returns tm with node timeouts of at least nt, every
// duration multiplied by the same whole number: a test on a loaded machine
// runs the same demo, only slower.
func (tm timing) withNodeTimeout(nt time.Duration) timing {
	if nt <= tm.lostNodeTimeout {
		return tm
	}
	k := (nt + tm.lostNodeTimeout - 1) / tm.lostNodeTimeout
	return timing{nodeTimeout: k * tm.nodeTimeout, lostTTL: k * tm.lostTTL, lostNodeTimeout: k * tm.lostNodeTimeout}
}

// deadline bounds the whole run, so that a hang fails: 30 node timeouts.
func (tm timing) deadline() time.Duration { return 30 * tm.nodeTimeout }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "otel:", err)
		os.Exit(1)
	}
}

// run is the whole program, with its output passed in so that a test can
// run it.
func run(ctx context.Context, out io.Writer) error { return runWith(ctx, demoTiming, out) }

// runWith is run with the timing tm.
func runWith(ctx context.Context, tm timing, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, tm.deadline())
	defer cancel()
	cluster, err := embedded.Start(nodes)
	if err != nil {
		return err
	}
	defer cluster.Close()

	// Spans are printed as they end, by a syncer. A service exports them in
	// the background instead, with sdktrace.WithBatcher and an OTLP
	// exporter.
	spanExporter, err := stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spanExporter))
	defer func() { err = errors.Join(err, tp.Shutdown(context.Background())) }()
	// Metrics are read once, at the end. A service uses a periodic reader.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { err = errors.Join(err, mp.Shutdown(context.Background())) }()

	hook, err := dlmotel.NewHook(dlmotel.WithTracerProvider(tp), dlmotel.WithMeterProvider(mp))
	if err != nil {
		return err
	}
	urls := make([]string, nodes)
	for i, addr := range cluster.Addrs() {
		urls[i] = "redis+goredis://" + addr
	}
	m, err := dlm.Open(urls, dlm.WithHook(hook), dlm.WithNodeTimeout(tm.nodeTimeout))
	if err != nil {
		return err
	}
	defer m.Close()

	d := &demo{tm: tm, m: m, cluster: cluster, tracer: tp.Tracer("example"), out: out}
	for _, scene := range []func(context.Context) error{d.lockExtendUnlock, d.contention, d.nodeKilled, d.lost} {
		if err := scene(ctx); err != nil {
			return err
		}
	}

	d.say("metrics")
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	metricExporter, err := stdoutmetric.New(stdoutmetric.WithWriter(out), stdoutmetric.WithPrettyPrint())
	if err != nil {
		return err
	}
	if err := metricExporter.Export(ctx, &rm); err != nil {
		return err
	}
	return m.Close()
}

// demo plays the scenes on one manager.
type demo struct {
	tm      timing
	m       *dlm.Manager
	cluster *embedded.Cluster
	tracer  trace.Tracer // the application's own
	out     io.Writer
}

// say prints a scene's title.
func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "\n== "+format+"\n\n", args...)
}

// lockExtendUnlock takes, extends and releases a lock inside a span of the
// application's, which becomes the parent of the lock's spans.
func (d *demo) lockExtendUnlock(ctx context.Context) error {
	d.say("1. Lock, Extend and Unlock inside the span \"checkout\"")
	ctx, span := d.tracer.Start(ctx, "checkout")
	defer span.End()
	l, err := d.m.Lock(ctx, "orders:42", dlm.WithFencing())
	if err != nil {
		return err
	}
	if err := l.Extend(ctx, dlm.DefaultTTL); err != nil {
		return errors.Join(err, l.Unlock(ctx))
	}
	return l.Unlock(ctx)
}

// contention tries a lock held by someone else.
func (d *demo) contention(ctx context.Context) error {
	d.say("2. TryLock on a lock held by someone else")
	held, err := d.m.Lock(ctx, "orders:42")
	if err != nil {
		return err
	}
	_, err = d.m.TryLock(ctx, "orders:42")
	if !errors.Is(err, dlm.ErrNotObtained) {
		err = fmt.Errorf("TryLock on a held lock: want ErrNotObtained, got %v", err)
	} else {
		err = nil
	}
	return errors.Join(err, held.Unlock(ctx))
}

// nodeKilled kills node 3 and takes a lock on the other two.
func (d *demo) nodeKilled(ctx context.Context) error {
	d.say("3. Node 3 (%s) killed: a lock on the other 2 of %d", d.cluster.Addrs()[2], nodes)
	d.cluster.Kill(2)
	l, err := d.m.Lock(ctx, "orders:43")
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

// lost runs a Do whose lock every node forgets while its function runs.
func (d *demo) lost(ctx context.Context) error {
	d.say("4. Do, and the nodes forget the lock while it runs (TTL %v)", d.tm.lostTTL)
	err := d.m.Do(ctx, "nightly-report", func(ctx context.Context) error {
		d.cluster.FlushAll()
		<-ctx.Done() // cancelled when the next extension finds the lock gone
		return nil
	}, dlm.WithTTL(d.tm.lostTTL), dlm.WithNodeTimeout(d.tm.lostNodeTimeout))
	if !errors.Is(err, dlm.ErrLockLost) {
		return fmt.Errorf("do whose lock was forgotten: want ErrLockLost, got %v", err)
	}
	return nil
}
