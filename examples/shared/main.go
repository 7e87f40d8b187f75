// Command shared shows a read-write lock and a semaphore on 5 miniredis
// servers embedded in the process.
//
//	go run ./examples/shared
//
// Part one: three readers hold a catalog together under [dlm.Manager.RDo];
// a writer that asks meanwhile waits for them with [dlm.Manager.Do], and a
// reader that comes after the writer started waiting waits behind it
// (writers are preferred). Part two: six encoders share a semaphore of 2
// permits ([dlm.Manager.Semaphore]); each permit needs 4 of the 5 nodes
// ([dlm.SemaphoreQuorum]), and no more than 2 encoders ever run at once.
//
// Every worker has a manager of its own, as separate processes would. The
// program checks itself and exits with status 1 if a writer ran with a
// reader, a late reader got in before the waiting writer, or more than 2
// encoders ran at once.
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
	"strings"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/examples/internal/demolog"
	"github.com/dlmgo/redlock/examples/internal/embedded"

	_ "github.com/dlmgo/redlock/backends/goredis"
	_ "github.com/dlmgo/redlock/backends/redigo"
	_ "github.com/dlmgo/redlock/backends/rueidis"
)

// The demo's settings.
const (
	nodes    = 5
	readers  = 3
	encoders = 6
	permits  = 2
)

// timing is the demo's clock: the locks' TTL, the bound on each request to
// a node, how long a reader reads (the writer writes half as long) and how
// long an encoder encodes.
type timing struct {
	ttl         time.Duration
	nodeTimeout time.Duration
	readTime    time.Duration
	encodeFor   time.Duration
}

// demoTiming is the timing the demo runs with. The node timeout bounds each
// request to a node. The demo's nodes run in its own process: its test runs
// them under -race on a loaded CI machine (make test-load), where 200 ms
// once timed out on all five nodes at once. A quarter of the TTL still
// leaves most of the validity, and healthy in-process nodes answer in well
// under 1 ms.
var demoTiming = timing{
	ttl:         2 * time.Second,
	nodeTimeout: 2 * time.Second / 4,
	readTime:    600 * time.Millisecond,
	encodeFor:   300 * time.Millisecond,
}

// withNodeTimeout returns tm with a node timeout of at least nt, and its
// other durations multiplied by the same whole number: a test on a loaded
// machine runs the same demo, only slower.
func (tm timing) withNodeTimeout(nt time.Duration) timing {
	if nt <= tm.nodeTimeout {
		return tm
	}
	k := (nt + tm.nodeTimeout - 1) / tm.nodeTimeout
	return timing{ttl: k * tm.ttl, nodeTimeout: k * tm.nodeTimeout, readTime: k * tm.readTime, encodeFor: k * tm.encodeFor}
}

// deadline bounds the whole run, so that a hang fails: 15 TTLs.
func (tm timing) deadline() time.Duration { return 15 * tm.ttl }

var backends = []string{"goredis", "redigo", "rueidis"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shared:", err)
		os.Exit(1)
	}
}

// run is the whole program, with its output passed in so that a test can
// run it.
func run(ctx context.Context, out io.Writer) error { return runWith(ctx, demoTiming, out) }

// runWith is run with the timing tm.
func runWith(ctx context.Context, tm timing, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, tm.deadline())
	defer cancel()
	log := demolog.New(out)
	ns, err := embedded.Start(nodes)
	if err != nil {
		return err
	}
	defer ns.Close()
	urls := make([]string, nodes)
	for i, a := range ns.Addrs() {
		urls[i] = fmt.Sprintf("redis+%s://%s", backends[i%len(backends)], a)
	}
	open := func() (*dlm.Manager, error) {
		return dlm.Open(urls, dlm.WithTTL(tm.ttl), dlm.WithNodeTimeout(tm.nodeTimeout),
			dlm.WithRetry(0, dlm.ExponentialBackoff(5*time.Millisecond, 50*time.Millisecond)))
	}
	log.Say("%d embedded miniredis nodes; every worker has a manager of its own", nodes)
	if err := readersAndWriter(ctx, tm, log, open); err != nil {
		return err
	}
	if err := encoderPool(ctx, tm, log, open); err != nil {
		return err
	}
	log.Say("ok: readers shared the catalog, the writer ran alone and before the late reader, at most %d encoders at once", permits)
	return nil
}

// gauge counts the workers inside a critical section.
type gauge struct {
	mu            sync.Mutex
	readers, most int
	writer        bool
	order         []string
}

func readersAndWriter(ctx context.Context, tm timing, log *demolog.Logger, open func() (*dlm.Manager, error)) error {
	var g gauge
	var wg sync.WaitGroup
	errs := make(chan error, readers+2)
	started := make(chan struct{}, readers+1) // the late reader's too
	read := func(name string) {
		defer wg.Done()
		m, err := open()
		if err != nil {
			errs <- err
			return
		}
		defer m.Close()
		errs <- m.RDo(ctx, "catalog", func(ctx context.Context) error {
			g.mu.Lock()
			if g.writer {
				g.mu.Unlock()
				return errors.New(name + " read while the writer wrote")
			}
			g.readers++
			g.most = max(g.most, g.readers)
			g.order = append(g.order, name)
			g.mu.Unlock()
			log.Event("%s: reading the catalog", name)
			started <- struct{}{}
			time.Sleep(tm.readTime)
			g.mu.Lock()
			g.readers--
			g.mu.Unlock()
			return nil
		})
	}
	for i := range readers {
		wg.Add(1)
		go read(fmt.Sprintf("reader %d", i+1))
	}
	for range readers {
		<-started
	}
	wm, err := open()
	if err != nil {
		return err
	}
	defer wm.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		log.Event("writer: asks for the catalog while %d readers hold it", readers)
		errs <- wm.Do(ctx, "catalog", func(ctx context.Context) error {
			g.mu.Lock()
			if g.readers > 0 {
				g.mu.Unlock()
				return errors.New("the writer wrote while readers read")
			}
			g.writer = true
			g.order = append(g.order, "writer")
			g.mu.Unlock()
			log.Event("writer: rewriting the catalog, alone")
			time.Sleep(tm.readTime / 2)
			g.mu.Lock()
			g.writer = false
			g.mu.Unlock()
			return nil
		})
	}()
	time.Sleep(tm.readTime / 3) // the writer is waiting by now
	wg.Add(1)
	go func() {
		log.Event("late reader: asks while the writer waits")
		read("late reader")
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	order := strings.Join(g.order, ", ")
	log.Say("order: %s; at most %d readers at once", order, g.most)
	if !strings.HasSuffix(order, "writer, late reader") {
		return fmt.Errorf("the late reader did not wait behind the waiting writer: %s", order)
	}
	if g.most < readers {
		return fmt.Errorf("at most %d readers at once; want the %d first readers together", g.most, readers)
	}
	return nil
}

func encoderPool(ctx context.Context, tm timing, log *demolog.Logger, open func() (*dlm.Manager, error)) error {
	var mu sync.Mutex
	in, most := 0, 0
	var wg sync.WaitGroup
	errs := make(chan error, encoders)
	log.Say("%d encoders share a semaphore of %d permits; each permit needs %d of the %d nodes",
		encoders, permits, dlm.SemaphoreQuorum(nodes, permits), nodes)
	for i := range encoders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := open()
			if err != nil {
				errs <- err
				return
			}
			defer m.Close()
			s, err := m.Semaphore("encoders", permits)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Do(ctx, func(ctx context.Context) error {
				mu.Lock()
				in++
				most = max(most, in)
				now := in
				mu.Unlock()
				log.Event("encoder %d: encoding (%d running)", i+1, now)
				time.Sleep(tm.encodeFor)
				mu.Lock()
				in--
				mu.Unlock()
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	log.Say("at most %d encoders ran at once", most)
	if most > permits {
		return fmt.Errorf("%d encoders ran at once under a semaphore of %d", most, permits)
	}
	return nil
}
