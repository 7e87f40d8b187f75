// Command longjob runs a job several times longer than its lock's TTL under
// [dlm.Manager.Do], on 5 miniredis servers embedded in the process: Do
// keeps the lock extended while the job runs, a second worker that wants
// the lock gets it only once the job is done, and the job stops through its
// context if the lock is lost.
//
//	go run ./examples/longjob        # the job runs to its end; exit status 0
//	go run ./examples/longjob -lose  # the lock is lost mid-job; exit status 3
//
// Worker A and worker B stand for two processes: each has a manager of its
// own over the same nodes, and a [dlm.Hook] that logs the extensions,
// failed extensions and losses of its locks. A's job is 8 steps of 1 s
// under a lock with a TTL of 2 s; B calls [dlm.Manager.Lock] as soon as A
// holds the lock, and its refused attempts are counted.
//
// With -lose, every node forgets its keys after step 3, as if all of them
// restarted at once without persistence, which the Redlock rules forbid.
// The next extension finds the lock gone, the job's context is cancelled
// and the job stops; Do returns an error wrapping [dlm.ErrLockLost]. The log
// also shows the window such a loss opens: B may get the lock before A's job
// notices, and in that window only a fencing token checked by the protected
// resource keeps A's late writes out (docs/fencing.md).
//
// The program checks itself: it fails if B gets the lock before A's job
// ended, if the job outlived the TTL without an extension, or, with -lose,
// if the job ran to its end. Exit status: 0 when the job ran to its end
// under the lock, 3 when it stopped because the lock was lost (a job runner
// should not report such a job as done), 2 for bad arguments, 1 for any
// other failure.
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
	"github.com/dlmgo/redlock/examples/internal/demolog"
	"github.com/dlmgo/redlock/examples/internal/embedded"

	// Each backend registers its driver name for node URLs:
	// redis+goredis://, redis+redigo://, redis+rueidis://.
	_ "github.com/dlmgo/redlock/backends/goredis"
	_ "github.com/dlmgo/redlock/backends/redigo"
	_ "github.com/dlmgo/redlock/backends/rueidis"
)

// The demo's settings.
const (
	lockKey   = "reports:nightly"
	steps     = 8
	embeddedN = 5
	loseAfter = 3 // steps done when -lose wipes the nodes
)

// timing is the demo's clock: the lock's TTL, the bound on each request to
// a node, and the length of a step of the job, half a TTL, so that the job
// of 8 steps lasts 4 TTLs.
type timing struct {
	ttl         time.Duration
	nodeTimeout time.Duration
	step        time.Duration
}

// demoTiming is the timing the demo runs with. The node timeout derived
// from the TTL is a twentieth of it, tight for a loaded machine running the
// test under -race with the nodes in the same process; with a 1 s TTL even
// 200 ms ones failed twice in a row there (make test-load). An eighth of a
// 2 s TTL still leaves Do most of the validity to retry an extension that
// failed.
var demoTiming = timing{ttl: 2 * time.Second, nodeTimeout: 2 * time.Second / 8, step: time.Second}

// withNodeTimeout returns tm with a node timeout of at least nt, its TTL
// and step multiplied by the same whole number, so that the node timeout
// stays at most an eighth of the TTL and the job 4 TTLs: a test on a
// loaded machine runs the same demo, only slower.
func (tm timing) withNodeTimeout(nt time.Duration) timing {
	if nt <= tm.nodeTimeout {
		return tm
	}
	k := (nt + tm.nodeTimeout - 1) / tm.nodeTimeout
	return timing{ttl: k * tm.ttl, nodeTimeout: nt, step: k * tm.step}
}

// job is how long worker A's job runs.
func (tm timing) job() time.Duration { return steps * tm.step }

// deadline bounds the whole run, so that a hang fails: 15 TTLs.
func (tm timing) deadline() time.Duration { return 15 * tm.ttl }

// Exit statuses.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitLockLost = 3
)

// backends are given to nodes in turn, so that each manager mixes them all.
var backends = []string{"goredis", "redigo", "rueidis"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	os.Exit(code)
}

// run is the whole program, with its output and arguments passed in so that
// a test can run it. It returns the exit status.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return runWith(ctx, demoTiming, stdout, stderr, args)
}

// runWith is run with the timing tm.
func runWith(ctx context.Context, tm timing, stdout, stderr io.Writer, args []string) int {
	fs := flag.NewFlagSet("longjob", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lose := fs.Bool("lose", false, fmt.Sprintf("wipe every node after step %d of the job, so that the lock is lost", loseAfter))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "longjob: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	err := runDemo(ctx, tm, stdout, *lose)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, dlm.ErrLockLost):
		fmt.Fprintln(stderr, "longjob: the job did not run to its end under the lock:", oneLine(err))
		return exitLockLost
	}
	fmt.Fprintln(stderr, "longjob:", oneLine(err))
	return exitFailed
}

// demo is one run: worker A's job and worker B's wait, and when things
// happened.
type demo struct {
	tm    timing
	log   *demolog.Logger
	nodes *embedded.Cluster
	lose  bool

	mu       sync.Mutex
	jobEnded time.Time // A's job ran to its end
	stopped  time.Time // A's job stopped on the loss of the lock
	wiped    time.Time // -lose wiped the nodes
	bGot     time.Time // B obtained the lock
}

func runDemo(ctx context.Context, tm timing, out io.Writer, lose bool) error {
	ctx, cancel := context.WithTimeout(ctx, tm.deadline())
	defer cancel()
	log := demolog.New(out)
	ns, err := embedded.Start(embeddedN)
	if err != nil {
		return err
	}
	defer ns.Close()
	d := &demo{tm: tm, log: log, nodes: ns, lose: lose}

	a := &observer{worker: "A", log: log}
	b := &observer{worker: "B", log: log}
	ma, err := openManager(tm, ns.Addrs(), a)
	if err != nil {
		return err
	}
	defer ma.Close()
	mb, err := openManager(tm, ns.Addrs(), b)
	if err != nil {
		return err
	}
	defer mb.Close()

	log.Say("%d embedded miniredis nodes; workers A and B each have a manager over all of them", embeddedN)
	log.Say("lock %q: TTL %v, quorum %d of %d; worker A's job: %d steps of %v, %v in all (%d TTLs)",
		lockKey, tm.ttl, embeddedN/2+1, embeddedN, steps, tm.step, tm.job(), tm.job()/tm.ttl)
	if lose {
		log.Say("-lose: every node will be wiped after step %d", loseAfter)
	}

	held := make(chan struct{}) // closed once A holds the lock
	bctx, stopB := context.WithCancel(ctx)
	defer stopB()
	bDone := make(chan error, 1)
	go func() { bDone <- d.workerB(bctx, mb, b, held) }()

	err = ma.Do(ctx, lockKey, func(ctx context.Context) error {
		close(held)
		return d.job(ctx, a, b)
	})
	if err != nil {
		log.Event("worker A: Do returned: %s", oneLine(err))
	} else {
		log.Event("worker A: Do returned; the lock is released")
	}
	select {
	case <-held:
	default:
		stopB() // A never held the lock: B has nothing to wait for
	}
	if berr := <-bDone; berr != nil {
		// Not a lost lock of A's, whatever A's error: never exit status 3.
		return errors.New(oneLine(errors.Join(berr, err)))
	}
	if lose {
		return d.checkLost(err)
	}
	if err != nil {
		return err
	}
	return d.checkDone(a, b)
}

func openManager(tm timing, addrs []string, h dlm.Hook) (*dlm.Manager, error) {
	return dlm.Open(withBackends(addrs), dlm.WithTTL(tm.ttl), dlm.WithNodeTimeout(tm.nodeTimeout), dlm.WithHook(h))
}

// job is worker A's job, run by Do under the lock. Each step checks the
// context: Do cancels it when the lock is lost.
func (d *demo) job(ctx context.Context, a, b *observer) error {
	lock := dlm.LockFromContext(ctx)
	start := time.Now()
	d.log.Event("worker A: got the lock, valid for %v; the job starts", validFor(lock))
	step := time.NewTimer(d.tm.step)
	defer step.Stop()
	for n := 1; n <= steps; n++ {
		select {
		case <-ctx.Done():
			at := d.mark(&d.stopped)
			d.log.EventAt(at, "worker A: job stopped during step %d of %d: %v", n, steps, context.Cause(ctx))
			return fmt.Errorf("job stopped during step %d of %d", n, steps)
		case <-step.C:
		}
		d.log.Event("worker A: step %d of %d done; lock valid for %v more; worker B refused %d time(s) so far",
			n, steps, validFor(lock), b.refused.Load())
		if d.lose && n == loseAfter {
			at := d.mark(&d.wiped)
			d.nodes.FlushAll()
			d.log.EventAt(at, "wiping every node, as if all restarted empty at once")
		}
		step.Reset(d.tm.step)
	}
	at := d.mark(&d.jobEnded)
	d.log.EventAt(at, "worker A: job done after %v, with %d extension(s); releasing",
		time.Since(start).Round(10*time.Millisecond), a.extended.Load())
	return nil
}

// workerB waits for A to hold the lock, then takes it as a second process
// would, and releases it at once.
func (d *demo) workerB(ctx context.Context, m *dlm.Manager, b *observer, held <-chan struct{}) error {
	select {
	case <-held:
	case <-ctx.Done():
		return nil // A never held the lock
	}
	d.log.Event("worker B: wants the lock too; Lock waits for it")
	lock, err := m.Lock(ctx, lockKey)
	if err != nil {
		return fmt.Errorf("worker B: %w", err)
	}
	at := d.mark(&d.bGot)
	d.log.EventAt(at, "worker B: got the lock after %d refused attempt(s); releasing it", b.refused.Load())
	err = lock.Unlock(ctx)
	if d.lose && errors.Is(err, dlm.ErrLockLost) {
		// The nodes are wiped one after the other: an attempt of B's that
		// landed on a node not yet wiped (one A's key had not reached)
		// was wiped with it.
		d.log.Event("worker B: the wipe reached some of its nodes too: %v", oneLine(err))
		return nil
	}
	return err
}

// checkDone checks a run without -lose: the lock outlived its TTL by
// extension, and B got it only after A's job.
func (d *demo) checkDone(a, b *observer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case a.extended.Load() == 0:
		return fmt.Errorf("the job ran %v under a lock with a TTL of %v, but no extension was seen", d.tm.job(), d.tm.ttl)
	case b.refused.Load() == 0:
		return errors.New("worker B was never refused while worker A held the lock")
	case !d.bGot.After(d.jobEnded):
		return fmt.Errorf("mutual exclusion broken: worker B got the lock %v before worker A's job ended", d.jobEnded.Sub(d.bGot))
	}
	d.log.Event("ok: the job ran %v under a lock with a TTL of %v, kept by %d extension(s); worker B, refused %d time(s), got the lock %v after the job ended",
		d.tm.job(), d.tm.ttl, a.extended.Load(), b.refused.Load(), d.bGot.Sub(d.jobEnded).Round(time.Millisecond))
	return nil
}

// checkLost checks a run with -lose: Do reported the loss, and the job
// stopped before its end. It returns Do's error.
func (d *demo) checkLost(err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case err == nil || !d.jobEnded.IsZero():
		return errors.New("-lose: the job ran to its end although every node was wiped")
	case !errors.Is(err, dlm.ErrLockLost):
		return err
	case d.stopped.IsZero():
		return fmt.Errorf("-lose: the job did not stop on the loss of the lock: %v", oneLine(err))
	}
	d.log.Event("the job stopped %v after the nodes were wiped", d.stopped.Sub(d.wiped).Round(time.Millisecond))
	if d.bGot.Before(d.stopped) {
		d.log.Say("           worker B got the lock %v before worker A's job noticed the loss: for that long both",
			d.stopped.Sub(d.bGot).Round(time.Millisecond))
		d.log.Say("           acted as holders. Only a fencing token checked by the resource keeps A out then (docs/fencing.md).")
	} else {
		d.log.Say("           worker A's job stopped before worker B got the lock; had it noticed later, both would")
		d.log.Say("           have acted as holders for a while. Only fencing guards against that (docs/fencing.md).")
	}
	return err
}

// mark sets *t to now and returns it.
func (d *demo) mark(t *time.Time) time.Time {
	now := time.Now()
	d.mu.Lock()
	*t = now
	d.mu.Unlock()
	return now
}

// observer is a worker's dlm.Hook: it counts refused attempts and
// extensions, and logs extensions, failed extensions and losses. OnEvent
// runs on the goroutine of the lock operation, so it only counts and prints.
type observer struct {
	worker   string
	log      *demolog.Logger
	extended atomic.Int32
	refused  atomic.Int32
}

func (o *observer) OnEvent(_ context.Context, e *dlm.Event) {
	switch e.Kind {
	case dlm.EventAttempt:
		if e.Err != nil {
			o.refused.Add(1)
		}
	case dlm.EventExtended:
		n := o.extended.Add(1)
		o.log.Event("worker %s: lock extended by Do (extension %d, round trip %v)", o.worker, n, e.Duration.Round(100*time.Microsecond))
	case dlm.EventExtendFailed:
		o.log.Event("worker %s: extension failed: %v", o.worker, oneLine(e.Err))
	case dlm.EventLost:
		o.log.Event("worker %s: lock lost: %v", o.worker, oneLine(e.Err))
	}
}

// validFor is how much of the lock's validity is left.
func validFor(l *dlm.Lock) time.Duration {
	return time.Until(l.Until()).Round(time.Millisecond)
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

// oneLine joins the lines of an error, as errors.Join makes them.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
