// Command election shows leader election over Redlock: three candidates,
// each with a manager of its own as separate processes would have, campaign
// for one election while an observer prints every change of leader.
//
// Each leader works a moment, then resigns, and a waiting candidate takes
// over at once — except host-b, which "crashes": its manager closes without
// resigning, and a candidate still waiting takes over when host-b's keys
// expire, within a TTL. The observer hears each change: resignations and new
// leaders at once from the nodes' announcements, a crash when the keys
// expire.
//
// With no flags it starts 3 miniredis servers inside this process; with
// -nodes url,url,... it runs against real Redis masters. The program checks
// itself: two leaders at once, a leader the observer did not report, or a
// failed resign makes it exit with status 1. It exits 0 on success.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/examples/internal/demolog"
	"github.com/dlmgo/redlock/examples/internal/embedded"

	_ "github.com/dlmgo/redlock/backends/goredis"
)

// The election's name.
const election = "scheduler"

// timing is the demo's clock.
type timing struct {
	ttl         time.Duration
	nodeTimeout time.Duration
	leadTime    time.Duration // how long each leader works
	changeWait  time.Duration // bound on waiting for any change
	stagger     time.Duration // between the candidates' starts
}

// demoTiming is the timing the demo runs with.
var demoTiming = timing{
	ttl:         time.Second,
	nodeTimeout: 200 * time.Millisecond,
	leadTime:    300 * time.Millisecond,
	changeWait:  10 * time.Second,
	stagger:     50 * time.Millisecond,
}

// withNodeTimeout returns tm with a node timeout of at least nt, and its
// other durations multiplied by the same whole number: a test on a loaded
// machine runs the same demo, only slower.
func (tm timing) withNodeTimeout(nt time.Duration) timing {
	if nt <= tm.nodeTimeout {
		return tm
	}
	k := (nt + tm.nodeTimeout - 1) / tm.nodeTimeout
	return timing{ttl: k * tm.ttl, nodeTimeout: k * tm.nodeTimeout, leadTime: k * tm.leadTime,
		changeWait: k * tm.changeWait, stagger: k * tm.stagger}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "election:", err)
		os.Exit(1)
	}
}

// run is the whole program, with its output and arguments passed in so that
// a test can run it.
func run(ctx context.Context, out io.Writer, args []string) error {
	return runWith(ctx, demoTiming, out, args)
}

// runWith is run with the timing tm.
func runWith(ctx context.Context, tm timing, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("election", flag.ContinueOnError)
	fs.SetOutput(out)
	nodesFlag := fs.String("nodes", "", "comma-separated Redis master URLs (default: 3 embedded miniredis servers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := demolog.New(out)
	var urls []string
	if *nodesFlag == "" {
		cluster, err := embedded.Start(3)
		if err != nil {
			return err
		}
		defer cluster.Close()
		for _, a := range cluster.Addrs() {
			urls = append(urls, "redis+goredis://"+a)
		}
		log.Say("3 embedded Redis nodes")
	} else {
		urls = strings.Split(*nodesFlag, ",")
		log.Say("%d Redis nodes from -nodes", len(urls))
	}
	open := func() (*dlm.Manager, error) {
		return dlm.Open(urls, dlm.WithTTL(tm.ttl), dlm.WithNodeTimeout(tm.nodeTimeout))
	}

	// The observer.
	watcher, err := open()
	if err != nil {
		return err
	}
	defer watcher.Close()
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched, err := watcher.Election(election)
	if err != nil {
		return err
	}
	obs, err := watched.Observe(octx)
	if err != nil {
		return err
	}
	var (
		seenMu sync.Mutex
		seen   []string
	)
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for o := range obs {
			seenMu.Lock()
			if o.Leader {
				log.Event("observer: leader is %s", o.Value)
				seen = append(seen, o.Value)
			} else {
				log.Event("observer: no leader")
			}
			seenMu.Unlock()
		}
	}()

	// The candidates.
	var (
		leaders atomic.Int32
		overlap atomic.Bool
		wg      sync.WaitGroup
		errs    = make(chan error, 3)
	)
	for _, name := range []string{"host-a", "host-b", "host-c"} {
		m, err := open()
		if err != nil {
			return err
		}
		defer m.Close()
		e, err := m.Election(election)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 3*tm.changeWait)
			ld, err := e.Campaign(cctx, name)
			cancel() // the leadership does not depend on it
			if err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				return
			}
			if leaders.Add(1) > 1 {
				overlap.Store(true)
			}
			log.Event("%s: leading, term %d", name, ld.Term())
			select {
			case <-time.After(tm.leadTime):
			case <-ld.Lost():
				errs <- fmt.Errorf("%s: leadership lost", name)
			}
			leaders.Add(-1)
			if name == "host-b" {
				log.Event("%s: crashing without resigning", name)
				m.Close()
				return
			}
			log.Event("%s: resigning", name)
			if err := ld.Resign(ctx); err != nil {
				errs <- fmt.Errorf("%s: resign: %w", name, err)
			}
		}()
		// Start them in order, so the story is always the same.
		time.Sleep(tm.stagger)
	}
	wg.Wait()
	close(errs)
	var failed []error
	for err := range errs {
		failed = append(failed, err)
	}
	// Let the observer hear the last resignation.
	time.Sleep(tm.ttl / 2)
	cancel()
	<-observed
	if overlap.Load() {
		failed = append(failed, errors.New("two leaders at once"))
	}
	seenMu.Lock()
	if len(seen) != 3 {
		failed = append(failed, fmt.Errorf("observer saw %d leaders (%v); want 3", len(seen), seen))
	}
	seenMu.Unlock()
	if err := errors.Join(failed...); err != nil {
		return err
	}
	log.Say("ok: three leaders in turn, never two at once, each one observed")
	return nil
}
