// Command quickstart shows a Redlock lock manager at work: a few workers take
// turns on one lock held across several Redis nodes, a failed TryLock reports
// the nodes' vote, and the lock keeps working when a node dies.
//
// It runs in one of two modes:
//
//   - With no flags (the embedded default) it starts 5 miniredis servers
//     inside this process, so nothing needs installing, and opens one
//     manager over them that mixes the goredis, redigo and rueidis backends
//     node by node. After the workers' turns it kills a node and shows the
//     lock still working on the other 4 (the quorum is 3 of 5), then kills
//     two more to show the error for a quorum out of reach.
//   - With -nodes url,url,... it does the same against real Redis masters,
//     except killing nodes, which it cannot do to a real server. A URL may
//     name its backend (redis+goredis://host:6379); a plain redis:// URL or
//     a bare host:port gets the three backends in turn.
//
// The program checks itself as it goes: a worker that finds another holder
// inside the lock, a lock that does not reach the expected outcome, or a
// failed unlock makes it exit with status 1. It exits 0 on success.
//
// miniredis is a stand-in for demos and tests, not a Redis to lock on in
// production: it lives in the process that takes the locks.
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
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/examples/internal/demolog"
	"github.com/dlmgo/redlock/examples/internal/embedded"

	// Each backend registers its driver name for node URLs:
	// redis+goredis://, redis+redigo://, redis+rueidis://.
	_ "github.com/dlmgo/redlock/backends/goredis"
	_ "github.com/dlmgo/redlock/backends/redigo"
	_ "github.com/dlmgo/redlock/backends/rueidis"
)

// The demo's settings. The TTL is far longer than a turn's work, so a worker
// that finds another holder inside the lock is a bug, not a slow machine.
const (
	lockKey   = "quickstart"
	lockTTL   = 5 * time.Second
	workTime  = 20 * time.Millisecond
	embeddedN = 5
	lockWait  = 10 * time.Second // for one turn: ample for a few workers
	// The default node timeout for this TTL, 250 ms, is too short for a
	// loaded CI machine running the test under -race, where the scheduler
	// alone can stall a process for 400 ms. Killed nodes refuse connections
	// at once, so a longer timeout costs the demo nothing.
	nodeTimeout = time.Second
	deadline    = 30 * time.Second // the whole run, so that a hang fails
	maxWorkers  = 64
)

// backends are given to nodes in turn, so that one manager mixes them all.
var backends = []string{"goredis", "redigo", "rueidis"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run is the whole program, with its output and arguments passed in so that
// a test can run it.
func run(ctx context.Context, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(out)
	nodesFlag := fs.String("nodes", "", "comma-separated Redis master URLs, such as redis+goredis://host:6379 (default: 5 embedded miniredis nodes)")
	workers := fs.Int("workers", 4, "goroutines taking turns on the lock")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (node URLs go in -nodes, separated by commas)", fs.Arg(0))
	}
	if *workers < 1 || *workers > maxWorkers {
		return fmt.Errorf("-workers %d: want 1 to %d", *workers, maxWorkers)
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()

	log := demolog.New(out)
	d := &demo{log: log, workers: *workers}
	var urls []string
	if *nodesFlag == "" {
		cluster, err := embedded.Start(embeddedN)
		if err != nil {
			return err
		}
		defer cluster.Close()
		d.cluster = cluster
		urls = withBackends(cluster.Addrs())
		log.Say("%d embedded miniredis nodes in this process, one manager over three client libraries:", embeddedN)
	} else {
		var err error
		if urls, err = parseNodes(*nodesFlag); err != nil {
			return err
		}
		log.Say("%d Redis nodes from -nodes:", len(urls))
	}

	m, err := dlm.Open(urls, dlm.WithTTL(lockTTL), dlm.WithNodeTimeout(nodeTimeout))
	if err != nil {
		return err
	}
	defer m.Close()
	d.m = m
	for i, u := range urls {
		log.Say("  node %d  %s", i+1, driver.Redact(u))
	}
	if err := d.run(ctx); err != nil {
		return err
	}
	return m.Close()
}

// demo is one run of the show, over one manager.
type demo struct {
	m       *dlm.Manager
	cluster *embedded.Cluster // nil for real nodes
	log     *demolog.Logger
	workers int

	holders atomic.Int32 // goroutines inside the lock right now: 0 or 1
	mu      sync.Mutex
	turns   map[int]int // turns taken, by worker
}

func (d *demo) run(ctx context.Context) error {
	n := len(d.m.Nodes())
	d.log.Say("%d workers take turns on lock %q (TTL %v, quorum %d of %d):", d.workers, lockKey, lockTTL, quorum(n), n)
	if err := d.takeTurns(ctx, 2); err != nil {
		return err
	}
	if err := d.tryWhileHeld(ctx, dlm.ErrNotObtained); err != nil {
		return err
	}

	if d.cluster == nil {
		// A real server cannot be killed from here.
		d.log.Say("real nodes: skipping the node kill (stop one yourself and run again: %d of %d must answer)", quorum(n), n)
		return d.done()
	}

	d.log.Event("killing node 5 (%s): %d nodes left, quorum still %d", d.cluster.Addrs()[4], n-1, quorum(n))
	d.cluster.Kill(4)
	if err := d.takeTurns(ctx, 1); err != nil {
		return err
	}
	if err := d.tryWhileHeld(ctx, dlm.ErrNotObtained); err != nil {
		return err
	}

	d.log.Event("killing nodes 3 and 4: 2 nodes left, below the quorum of %d", quorum(n))
	d.cluster.Kill(2)
	d.cluster.Kill(3)
	if err := d.tryUnavailable(ctx); err != nil {
		return err
	}
	return d.done()
}

// takeTurns starts the workers, each taking the lock turns times, and
// waits for them. It fails if two ever hold the lock at once. The first
// failure stops the other workers, and only it is returned: the others'
// errors would most often repeat it.
func (d *demo) takeTurns(ctx context.Context, turns int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := 1; w <= d.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range turns {
				if err := d.turn(ctx, w); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx) // nil unless a worker failed or ctx ended
}

// turn takes the lock, does the work and releases it. It logs inside the
// lock, so the log's order is the order of the turns.
func (d *demo) turn(ctx context.Context, w int) error {
	// Lock retries until its context ends: bound the wait, so that nodes
	// that are down fail the demo in seconds rather than at its deadline.
	wait, cancel := context.WithTimeout(ctx, lockWait)
	lock, err := d.m.Lock(wait, lockKey)
	cancel()
	if err != nil {
		return fmt.Errorf("worker %d: %w", w, err)
	}
	got := time.Now()
	// The overlap detector: the lock's whole point is that this count never
	// goes past 1.
	if h := d.holders.Add(1); h != 1 {
		_ = lock.Unlock(ctx)
		return fmt.Errorf("worker %d: mutual exclusion broken: %d holders at once", w, h)
	}
	d.mu.Lock()
	if d.turns == nil {
		d.turns = make(map[int]int)
	}
	d.turns[w]++
	d.mu.Unlock()

	time.Sleep(workTime) // the work the lock protects
	// A holder may act only before Until; past it, another may hold the lock.
	if time.Now().After(lock.Until()) {
		_ = lock.Unlock(ctx)
		return fmt.Errorf("worker %d: the work outlasted the lock's validity", w)
	}
	d.log.EventAt(got, "worker %d got the lock (valid %v), worked %v, releasing", w, lock.Until().Sub(got).Round(10*time.Millisecond), workTime)
	d.holders.Add(-1) // before Unlock: the next holder may get in right after it
	if err := lock.Unlock(ctx); err != nil {
		return fmt.Errorf("worker %d: %w", w, err)
	}
	return nil
}

// tryWhileHeld takes the lock, then shows a TryLock failing on it, which
// must fail with want.
func (d *demo) tryWhileHeld(ctx context.Context, want error) error {
	lock, err := d.m.Lock(ctx, lockKey)
	if err != nil {
		return err
	}
	_, err = d.m.TryLock(ctx, lockKey)
	return errors.Join(d.showVote("TryLock while main holds it", err, want), lock.Unlock(ctx))
}

// tryUnavailable shows a TryLock failing for want of nodes: nobody holds the
// lock, but too few nodes answer to grant it.
func (d *demo) tryUnavailable(ctx context.Context) error {
	lock, err := d.m.TryLock(ctx, lockKey)
	if err == nil {
		_ = lock.Unlock(ctx)
		return errors.New("TryLock succeeded with 2 of 5 nodes: the quorum is 3")
	}
	return d.showVote("TryLock with 3 nodes down", err, dlm.ErrUnavailable)
}

// showVote prints a failed attempt's vote and checks its kind. The vote
// counts the replies that came in before the outcome was certain: the
// manager stops waiting once a quorum is out of reach.
func (d *demo) showVote(what string, err, want error) error {
	var qerr *dlm.QuorumError
	if !errors.As(err, &qerr) {
		return fmt.Errorf("%s: want a *dlm.QuorumError, got %v", what, err)
	}
	d.log.Event("%s: %d for, %d against, %d failed of %d nodes", what, qerr.For, qerr.Against, qerr.Failed, qerr.Nodes)
	d.log.Say("           errors.Is(err, dlm.ErrNotObtained) = %v, errors.Is(err, dlm.ErrUnavailable) = %v",
		errors.Is(err, dlm.ErrNotObtained), errors.Is(err, dlm.ErrUnavailable))
	// Each failed node is a *dlm.NodeError naming it.
	var nerr *dlm.NodeError
	if errors.As(err, &nerr) {
		d.log.Say("           first node error: %s", firstLine(nerr.Error()))
	}
	if !errors.Is(err, want) {
		return fmt.Errorf("%s: want an error matching %v, got %w", what, want, err)
	}
	return nil
}

// done checks the turns and prints the verdict.
func (d *demo) done() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	total := 0
	for _, n := range d.turns {
		total += n
	}
	if len(d.turns) < min(2, d.workers) {
		return fmt.Errorf("only %d worker(s) got the lock", len(d.turns))
	}
	workers := "workers"
	if len(d.turns) == 1 {
		workers = "worker"
	}
	d.log.Event("ok: %d turns by %d %s, never two holders at once", total, len(d.turns), workers)
	return nil
}

// withBackends turns addresses into node URLs that use the backends in
// turn.
func withBackends(addrs []string) []string {
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = "redis+" + backends[i%len(backends)] + "://" + a
	}
	return urls
}

// parseNodes reads -nodes. A URL that names no backend gets one by its
// position, as the embedded nodes do: with all three registered, the library
// rightly refuses to pick one for a plain redis:// URL.
func parseNodes(s string) ([]string, error) {
	var urls []string
	for _, u := range strings.Split(s, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		b := backends[len(urls)%len(backends)]
		switch {
		case !strings.Contains(u, "://"):
			u = "redis+" + b + "://" + u
		case strings.HasPrefix(u, "redis://"), strings.HasPrefix(u, "rediss://"):
			scheme, rest, _ := strings.Cut(u, "://")
			u = scheme + "+" + b + "://" + rest
		}
		urls = append(urls, u)
	}
	if len(urls) == 0 {
		return nil, errors.New("-nodes: no URLs")
	}
	return urls, nil
}

func quorum(n int) int { return n/2 + 1 }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
