package dlm

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
)

// nodeSender sends a manager's batches of extensions to one node, in the
// order the extender gives them (nearest to the end of their locks'
// validity first within a round), with at most batchesInFlight of them in
// flight. Each node has its own: a slow node holds up no other, and the
// batches wait in the extender's process rather than in the node's
// connections and input buffer, where, under load, every one of them would
// be late, and time out, at once. A batch that waits until its first lock
// has less than half a node timeout left fails on the node unsent
// (errTooLate): the process did not send it in time, and would spend on it
// what it lacks.
//
// Its goroutine is one of the manager's, started with the extender's, and
// ends when the manager closes, failing what it still holds with
// ErrClosed.
type nodeSender struct {
	x    *extender
	i    int // the node
	wake chan struct{}

	mu     sync.Mutex
	queue  []*sweepChunk
	busy   int  // batches in flight
	per    int  // batchesInFlight, but in tests
	closed bool // the manager closed: run returned
	// meter measures the time the node's batches take per renewal, from
	// when each was sent, less the node's round trip, or from when the one
	// before it settled, to when it settled (batchBusy): the node's busy
	// time, shared out among its batches, over the renewals of those that
	// succeeded (admission.go). lastDone is when the last batch settled.
	meter    costMeter
	lastDone time.Time
}

// batchesInFlight is how many batches of extensions a manager may have in
// flight to one node: a few round trips' worth of the extensions of
// hundreds of thousands of locks.
const batchesInFlight = 8

// errTooLate is the failure of a node that was not sent a batch of
// extensions because the first of its locks had less than half a node
// timeout left to be extended by then.
var errTooLate = errors.New("dlm: extension batch not sent: the node's earlier batches took the time its locks had left")

// addr is the node's address, for reports.
func (n *nodeSender) addr() string { return n.x.m.nodes[n.i].addr }

func newNodeSender(x *extender, i int) *nodeSender {
	return &nodeSender{x: x, i: i, wake: make(chan struct{}, 1), per: batchesInFlight}
}

// add queues c for the node, or fails it there once the manager closed.
func (n *nodeSender) add(c *sweepChunk) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		c.answer(round.BatchReply{Node: n.i, Err: n.x.m.nodes.nodeError(n.i, ErrClosed)})
		return
	}
	n.queue = append(n.queue, c)
	n.mu.Unlock()
	n.poke()
}

func (n *nodeSender) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run is the sender's goroutine.
func (n *nodeSender) run() {
	for {
		select {
		case <-n.x.m.life.done:
			n.mu.Lock()
			left := n.queue
			n.queue, n.closed = nil, true
			n.mu.Unlock()
			for _, c := range left {
				c.answer(round.BatchReply{Node: n.i, Err: n.x.m.nodes.nodeError(n.i, ErrClosed)})
			}
			return
		case <-n.wake:
		}
	sending:
		for {
			select {
			case <-n.x.m.life.done:
				break sending // the batches still queued fail with ErrClosed
			default:
			}
			n.mu.Lock()
			if len(n.queue) == 0 || n.busy >= n.per {
				n.mu.Unlock()
				break sending
			}
			c := n.queue[0]
			n.queue[0] = nil
			n.queue = n.queue[1:]
			now := time.Now()
			send := now.Before(c.sendBy)
			if send {
				n.busy++
			}
			n.mu.Unlock()
			waited := now.Sub(c.s.began)
			if !send {
				c.s.stall("waited %v for node %s and was not sent in time", len(c.entries), waited, n.addr())
				c.answer(round.BatchReply{Node: n.i, Err: n.x.m.nodes.nodeError(n.i, errTooLate)})
				continue
			}
			if 2*waited > c.sendBy.Sub(c.s.began) {
				c.s.stall("waited %v for node %s, more than half the time its locks had to be sent", len(c.entries), waited, n.addr())
			}
			n.send(c, now)
		}
	}
}

// send sends c to the node at now, under the earliest deadline of its
// locks counted from then (see [sweepEntry.wait]), which is never past the
// end of any of them.
func (n *nodeSender) send(c *sweepChunk, now time.Time) {
	c.s.begin(c, now)
	var deadline time.Time
	for k, e := range c.entries {
		en := &c.s.entries[e]
		if d := now.Add(en.wait(en.a.l, now)); k == 0 || d.Before(deadline) {
			deadline = d
		}
	}
	ctx, cancel := driver.WithNodeDeadline(context.Background(), deadline)
	n.x.m.rounds.Batch(ctx, n.i, c.req, func(b round.BatchReply) {
		cancel()
		if b.Err != nil && errors.Is(b.Err, context.DeadlineExceeded) {
			c.s.stall("went unanswered for %v by node %s", len(c.entries), time.Since(now), n.addr())
		}
		c.answer(b)
		rtt := n.x.m.rounds.SRTT(n.i)
		n.mu.Lock()
		// A failed batch took the node's time and renewed nothing.
		done, renewed := time.Now(), len(c.entries)
		if b.Err != nil {
			renewed = 0
		}
		n.meter.add(done, batchBusy(now, done, n.lastDone, rtt), renewed)
		n.lastDone = done
		n.busy--
		n.mu.Unlock()
		n.poke()
	})
}

// batchBusy is the node's busy time a batch sent at sent and settled at
// done counts for, the one before it having settled at lastDone: the time
// from the later of sent and lastDone, when no batch of the node's was
// settling yet, and of sent+rtt, when the batch could first have reached
// the node and come back, rtt being the node's round trip. The round trip
// is spent on the way, not running the batch: were it counted, nodes far
// away, or a loaded machine, would read as nodes at capacity whenever the
// rounds, a gathering window apart, keep a batch in flight, however few
// extensions each carries.
func batchBusy(sent, done, lastDone time.Time, rtt time.Duration) time.Duration {
	from := sent.Add(rtt)
	if lastDone.After(from) {
		from = lastDone
	}
	return max(done.Sub(from), 0)
}
