package goredis

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher sends the requests a node is given at the same time in one
// pipeline: one write and one read on one connection for many requests,
// on the client and on the server, where each would take its own.
//
// The first request to come while none is under way leads: it sends
// itself, and then the requests that came meanwhile, as one batch, and
// hands the lead to the first of those that come during that batch. A
// request that comes while a batch is under way waits for its reply, or
// for the lead. Nothing waits for a batch to fill: a request alone is sent
// at once, as by itself.
//
// Every request has a context of driver.WithNodeDeadline, which ends only
// at its deadline while the request runs. A batch is sent under the
// earliest deadline of its requests, so a request may fail at the deadline
// of one sent with it, shortly before its own: only when the node does not
// answer in time, when it would fail soon after anyway. A request whose
// context ends while it waits for a batch to take it returns at once; one
// whose context has ended by then is not sent.
type batcher struct {
	client redis.UniversalClient
	// grace is how long after the batch's deadline its connection waits
	// for the replies (see node.late).
	grace time.Duration

	mu      sync.Mutex
	leading bool      // a batch is under way
	queue   []*call   // the requests that came meanwhile, in order
	spare   []*call   // a batch's slice, reused
	calls   sync.Pool // of *call
}

// errBatchPanic is the error of the requests of a batch whose sending
// panicked.
var errBatchPanic = errors.New("goredis: the client panicked sending a batch of requests")

// call is one request in a batcher.
type call struct {
	ctx context.Context
	cmd *redis.Cmd
	// wake receives once: when cmd has its reply, or lead is set.
	wake   chan struct{}
	lead   bool
	queued bool // in batcher.queue
}

// do sends cmd within ctx, in a batch with the other requests under way,
// and returns when cmd has its reply, or ctx is done before it is sent.
func (b *batcher) do(ctx context.Context, cmd *redis.Cmd) {
	c, _ := b.calls.Get().(*call)
	if c == nil {
		c = &call{wake: make(chan struct{}, 1)}
	}
	c.ctx, c.cmd, c.lead = ctx, cmd, false
	b.mu.Lock()
	c.queued = true
	b.queue = append(b.queue, c)
	if b.leading {
		b.mu.Unlock()
		if !b.await(c) {
			b.put(c)
			return
		}
		b.mu.Lock() // the lead was handed over: c is in the queue
	}
	b.leading = true
	batch := b.queue
	b.queue = b.spare[:0]
	for _, c := range batch {
		c.queued = false
	}
	b.mu.Unlock()
	b.send(batch, c)
	b.put(c)
}

// await waits for c's reply, or for the lead, and reports whether c leads.
// Should c's context end while c waits to be sent, c leaves the queue with
// the context's error.
func (b *batcher) await(c *call) (lead bool) {
	select {
	case <-c.wake:
		return c.lead
	case <-c.ctx.Done():
	}
	b.mu.Lock()
	if c.queued && !c.lead {
		i := slices.Index(b.queue, c)
		b.queue = slices.Delete(b.queue, i, i+1)
		c.queued = false
		b.mu.Unlock()
		c.cmd.SetErr(c.ctx.Err())
		return false
	}
	b.mu.Unlock()
	<-c.wake // sent under a deadline that has passed, or handed the lead
	return c.lead
}

// send sends batch, led by self, wakes the others, and hands the lead on.
// A request whose context has ended is not sent.
func (b *batcher) send(batch []*call, self *call) {
	defer func() {
		// Also after a panic of the client: no request waits forever, and
		// none is left without a reply or an error.
		p := recover()
		for _, c := range batch {
			if p != nil && c.cmd.Err() == nil {
				c.cmd.SetErr(errBatchPanic)
			}
			if c != self {
				c.wake <- struct{}{}
			}
		}
		clear(batch)
		b.mu.Lock()
		b.spare = batch[:0]
		if len(b.queue) > 0 {
			next := b.queue[0]
			next.lead = true
			next.wake <- struct{}{}
		} else {
			b.leading = false
		}
		b.mu.Unlock()
		if p != nil {
			panic(p)
		}
	}()
	var (
		ctx   context.Context
		first time.Time
		live  int
	)
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.cmd.SetErr(err)
			continue
		}
		live++
		if d, ok := c.ctx.Deadline(); ctx == nil || ok && d.Before(first) {
			ctx, first = c.ctx, d
		}
	}
	// A batch of requests that all run on goroutines of their own reads
	// its replies past its deadline (see node.late); one with a request on
	// its caller's goroutine (node.inline), by the deadline.
	if live > 0 && !first.IsZero() && allAsync(batch) {
		ctx = lateContext{ctx, first.Add(b.grace)}
	}
	switch {
	case live == 0:
		return
	case live == 1:
		i := slices.IndexFunc(batch, func(c *call) bool { return c.cmd.Err() == nil })
		_ = b.client.Process(ctx, batch[i].cmd)
		return
	}
	pipe := b.client.Pipeline()
	for _, c := range batch {
		if c.cmd.Err() == nil {
			_ = pipe.Process(ctx, c.cmd)
		}
	}
	_, err := pipe.Exec(ctx)
	answered(batch, err)
}

// allAsync reports whether every request of batch that is to be sent runs
// on a goroutine of its own (asyncCtx).
func allAsync(batch []*call) bool {
	for _, c := range batch {
		if _, ok := c.ctx.(asyncCtx); !ok && c.cmd.Err() == nil {
			return false
		}
	}
	return true
}

// answered gives err, a pipeline's failure, to the requests of batch that
// have neither a reply nor an error. go-redis v9.0 leaves the commands of a
// pipeline that got no connection (the pool's wait, the dial or the
// handshake failed, or the context ended first) in that state: read as they
// are, they carry a nil reply, which SetNXGet takes for a key it set — a
// grant from a node it never reached. (Later releases set the error
// themselves.) A command that was read always has one or the other, a nil
// reply being the error [redis.Nil], so no reply is overwritten; and when
// err is an error reply of the server, every command was read.
//
// Invariant: every request of a batch ends with its own reply or an error.
func answered(batch []*call, err error) {
	if err == nil || isReply(err) {
		return
	}
	for _, c := range batch {
		if c.cmd.Err() == nil && c.cmd.Val() == nil {
			c.cmd.SetErr(err)
		}
	}
}

// put returns c to the pool, holding nothing of its request.
func (b *batcher) put(c *call) {
	c.ctx, c.cmd = nil, nil
	b.calls.Put(c)
}
