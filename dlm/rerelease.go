package dlm

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// A release that fails on a node leaves the key there for the rest of its
// TTL, and so does a release that runs on a node before the acquire it
// undoes: an acquire request that timed out may still sit in the node's
// socket (a frozen or overloaded server runs it later) or on another
// pooled connection than the release's. Either key keeps every other
// client from a quorum of that node until it expires. So a manager sends
// such a release again, to that node alone, in the background:
//
//   - a release that failed on a node, until the node answers it;
//   - a release that freed nothing on a node whose acquire request had
//     failed, until a release frees the key there (the late acquire ran,
//     and its key is gone): the acquire cannot be known to be gone
//     otherwise, since its reply never came;
//
// either way no later than when the key would have expired anyway: the
// end of the lock's validity plus the drift allowance, for a lock's
// release; the attempt's start plus the TTL, for an acquire that may run
// late. The waits between the sends grow from the node timeout, doubling,
// up to a tenth of what was left of that time at the first failure, each
// drawn at random from its upper half.
//
// Sending a release again is safe: every release script deletes only what
// holds the lock's secret, which is the lock's alone, so it never frees
// another holder's key, and where the first release ran it finds the key
// gone (or held by the waiter it was handed to, which it leaves alone).
// A failed attempt's release is sent again without the waiter's id (see
// [againRequest]), so that it never puts the waiter back in the lines it
// may have left since.
//
// Nothing of this runs while releases succeed: no goroutine, no
// allocation. The retries are bounded: at most maxRereleases per manager
// at once, queued or under way; beyond that the one whose key expires
// soonest is dropped. Each retried release ends in an [EventReleaseRetry].
// Close sends each release still queued once more, at once, and retries
// none after that.

// maxRereleases is the most releases a manager retries at once.
const maxRereleases = 1024

// rereleases are a manager's releases to send again. The zero value is
// not ready: see newRereleases.
type rereleases struct {
	rounds *round.Round
	work   *round.Pool
	nodes  nodeSet
	lg     *logging // the manager's
	limit  int      // maxRereleases; tests lower it

	mu      sync.Mutex
	queue   rereleaseQueue // by due
	flying  int            // sent, the reply still due
	running bool           // run's goroutine is under way
	closed  bool
	poke    chan struct{} // tells run of a new head of the queue, or Close

	// What became of them: releases scheduled, requests sent again, and
	// the ends of the scheduled ones — answered (freed), given up at the
	// TTL (expired), dropped for the bound or by Close.
	scheduled, resent, freed, expired, dropped atomic.Uint64
}

// newRereleases returns the retries of releases sent by rounds, on
// goroutines of work, reported on lg.
func newRereleases(rounds *round.Round, work *round.Pool, nodes nodeSet, lg *logging) *rereleases {
	return &rereleases{rounds: rounds, work: work, nodes: nodes, lg: lg, limit: maxRereleases, poke: make(chan struct{}, 1)}
}

// rerelease is one release to send again to one node.
type rerelease struct {
	req       *round.Request
	node      int
	overtaken bool      // the node's acquire failed: only a release that frees something ends it
	first     time.Time // when the release first failed, or freed nothing
	due       time.Time // when to send it next
	until     time.Time // when the key would expire anyway
	base, cap time.Duration
	tries     int   // how many times it was sent again
	lastErr   error // the node's last failure, nil once it answered
	idx       int   // in the queue
}

// afterUnlock schedules again the release req of a lock, whose vote was v,
// on every node that failed it, and on every node of late (the nodes whose
// acquire request failed) where it freed nothing, while the acquire could
// still run there: until lateUntil, the acquire's start plus its TTL.
// keysUntil is when the lock's keys expire. It does nothing, and allocates
// nothing, when every node released the lock and no acquire failed.
func (rr *rereleases) afterUnlock(req *round.Request, v *round.Vote, late uint64, keysUntil, lateUntil time.Time) {
	if v.Errs == nil && late == 0 {
		return
	}
	for i := range rr.nodes {
		failed := v.Errs != nil && v.Errs[i] != nil
		over := i < 64 && late&(1<<i) != 0 && v.Granted&(1<<i) == 0
		var until time.Time
		if failed {
			until = keysUntil
		}
		if over && lateUntil.After(until) {
			until = lateUntil
		}
		if failed || over {
			var err error
			if failed {
				err = v.Errs[i]
			}
			rr.add(againRequest(req), i, over, until, err)
		}
	}
}

// redo is the [round.Redo] of a failed attempt's release, whose Until is
// when the attempt's keys would expire anyway.
func (rr *rereleases) redo(req *round.Request, i int, overtaken bool, rep round.Reply) {
	rr.add(againRequest(req), i, overtaken, req.Until, rep.Err)
}

// add schedules req, a release that failed on node i with err (nil when
// it freed nothing there), to be sent again until until.
func (rr *rereleases) add(req *round.Request, i int, overtaken bool, until time.Time, err error) {
	now := time.Now()
	if !now.Before(until) {
		return // the key is gone by now, or the acquire cannot set one that lasts
	}
	base := req.Timeout
	e := &rerelease{
		req: req, node: i, overtaken: overtaken, first: now, until: until,
		base: base, cap: max(base, until.Sub(now)/10), lastErr: err,
	}
	e.due = now.Add(jitter(base))
	rr.mu.Lock()
	if rr.closed {
		rr.mu.Unlock()
		rr.end(e, &rr.dropped, fmt.Errorf("dlm: release on node %s not retried: %w", rr.nodes[i].addr, ErrClosed))
		return
	}
	var dropped *rerelease
	if len(rr.queue)+rr.flying >= rr.limit {
		dropped = e
		if len(rr.queue) > 0 {
			// Of the releases queued, drop the one whose key expires
			// soonest: it blocks others the shortest time.
			j := 0
			for k, q := range rr.queue {
				if q.until.Before(rr.queue[j].until) {
					j = k
				}
			}
			if rr.queue[j].until.Before(e.until) {
				dropped = heap.Remove(&rr.queue, j).(*rerelease)
			}
		}
	}
	rr.scheduled.Add(1)
	start := false
	if dropped != e {
		heap.Push(&rr.queue, e)
		start = rr.wake(e)
	}
	rr.mu.Unlock()
	if dropped != nil {
		rr.end(dropped, &rr.dropped, fmt.Errorf("dlm: release on node %s dropped: %d releases were being retried already", rr.nodes[dropped.node].addr, rr.limit))
	}
	if start {
		rr.work.Spawn(rr.run)
	}
}

// wake tells run of e, just queued, and reports whether run's goroutine
// must be started; rr.mu is held.
func (rr *rereleases) wake(e *rerelease) (start bool) {
	if !rr.running {
		rr.running = true
		return true
	}
	if e.idx == 0 {
		select {
		case rr.poke <- struct{}{}:
		default:
		}
	}
	return false
}

// run sends the releases as they fall due, each on a goroutine of its own,
// until none is queued or the manager closes.
func (rr *rereleases) run() {
	for {
		rr.mu.Lock()
		if rr.closed || len(rr.queue) == 0 {
			rr.running = false
			rr.mu.Unlock()
			return
		}
		now := time.Now()
		var due []*rerelease
		for len(rr.queue) > 0 && !rr.queue[0].due.After(now) {
			due = append(due, heap.Pop(&rr.queue).(*rerelease))
		}
		rr.flying += len(due)
		var wait time.Duration
		if len(due) == 0 {
			wait = rr.queue[0].due.Sub(now)
		}
		rr.mu.Unlock()
		for _, e := range due {
			rr.work.Spawn(func() { rr.send(e) })
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-rr.poke:
			}
			t.Stop()
		}
	}
}

// send sends e's release to its node, and queues it again unless the
// node's reply ends it.
func (rr *rereleases) send(e *rerelease) {
	rep := rr.rounds.AskOne(context.Background(), e.node, e.req)
	rr.resent.Add(1)
	e.tries++
	e.lastErr = rep.Err
	if rep.Err == nil && (rep.Yes || !e.overtaken) {
		rr.land()
		rr.end(e, &rr.freed, nil)
		return
	}
	now := time.Now()
	e.due = now.Add(jitter(ExponentialBackoff(e.base, e.cap)(e.tries + 1)))
	if !e.due.Before(e.until) {
		rr.land()
		rr.end(e, &rr.expired, e.gaveUp(rr.nodes[e.node].addr))
		return
	}
	rr.mu.Lock()
	rr.flying--
	if rr.closed {
		rr.mu.Unlock()
		rr.end(e, &rr.dropped, fmt.Errorf("dlm: release on node %s sent %d times, not retried: %w", rr.nodes[e.node].addr, e.tries, ErrClosed))
		return
	}
	heap.Push(&rr.queue, e)
	start := rr.wake(e)
	rr.mu.Unlock()
	if start {
		rr.work.Spawn(rr.run)
	}
}

// land counts a release that came back from its node for good.
func (rr *rereleases) land() {
	rr.mu.Lock()
	rr.flying--
	rr.mu.Unlock()
}

// gaveUp is the error of e given up at the key's TTL: nil when the node
// answered and only a late acquire that never ran kept it going.
func (e *rerelease) gaveUp(addr string) error {
	if e.lastErr == nil {
		return nil
	}
	return fmt.Errorf("dlm: release on node %s given up after %d retries, at the key's TTL: %w", addr, e.tries, e.lastErr)
}

// close sends every release still queued once more, at once, and stops
// the retries: none is queued after it. The sends end within the node
// timeout, on the manager's pool, whose Stop waits for them.
func (rr *rereleases) close() {
	rr.mu.Lock()
	rr.closed = true
	last := rr.queue
	rr.queue = nil
	rr.flying += len(last)
	rr.mu.Unlock()
	select {
	case rr.poke <- struct{}{}:
	default:
	}
	for _, e := range last {
		rr.work.Spawn(func() { rr.send(e) })
	}
}

// end counts e's end in n and reports it.
func (rr *rereleases) end(e *rerelease, n *atomic.Uint64, err error) {
	n.Add(1)
	ctx := context.Background()
	if !rr.lg.wants(ctx, EventReleaseRetry, err) {
		return
	}
	key := ""
	if len(e.req.Keys) > 0 {
		key = e.req.Keys[0]
	}
	rr.lg.emit(ctx, &Event{
		Kind: EventReleaseRetry, Op: e.req.Op, Key: key, Node: rr.nodes[e.node].addr,
		Start: e.first, Duration: time.Since(e.first), Attempts: e.tries, Err: err,
	})
}

// againRequest is req, a release, to send again to one node. A failed
// attempt's release of the mutex ([script.ReleaseAttempt],
// [script.ReleaseKeepTurn]) goes without the waiter's id: it only frees
// what holds the attempt's secret, and never gives the waiter its place
// in the lines back, nor reserves a key for it — the waiter may have left
// the lines, or been handed the key and taken it, since the first
// release. A lock's release goes as it was: it takes the waiter out of
// the lines again (it is out already), and hands on only a key that is
// free or still holds the secret (see [script.Release]).
func againRequest(req *round.Request) *round.Request {
	again := &round.Request{
		Op: req.Op, Script: req.Script, Keys: req.Keys, Args: req.Args, Want: req.Want, Timeout: req.Timeout,
		Flag: req.Flag, Loud: req.Loud, Quiet: req.Quiet, Until: req.Until,
	}
	if req.Script == script.Release && len(req.Args) > 5 && req.Args[5] != script.ReleaseLock && req.Args[1] != "" {
		args := slices.Clone(req.Args)
		args[1], args[5] = "", script.ReleaseAttempt
		again.Args = args
		if req.Flag.Mode == script.Quiet {
			again.Quiet = args
		}
	}
	return again
}

// rereleaseQueue is a heap of releases by when they are due.
type rereleaseQueue []*rerelease

func (q rereleaseQueue) Len() int           { return len(q) }
func (q rereleaseQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q rereleaseQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *rereleaseQueue) Push(x any) {
	e := x.(*rerelease)
	e.idx = len(*q)
	*q = append(*q, e)
}
func (q *rereleaseQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}
