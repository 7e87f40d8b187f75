package dlm

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// A sweep is one round of the extender: the extensions of the locks due
// together, cut into batches, each lock in one batch per node, and queued
// for each node to its sender ([nodeSender], sender.go), which sends them
// in order ([round.Round.Batch]). Each lock's vote is counted from the
// replies of the batches that carried it, and settled, as an extension by
// [Lock.Extend] is, the moment it is decided.
//
// The batch invariant: a lock's extension in a sweep is the extension of
// [Lock.Extend] with its requests sent at its start, when the first batch
// that carries it left for a node. Its start is read before that batch is
// sent ([sweep.begin]), so every node that extended the lock did so after
// it, and its key lives ttl from then: the lock's new validity, start +
// validity(ttl), counts from before any of its requests left, however long
// its batches waited in the senders' queues and whatever the other locks of
// its batches did. A node's reply counts for a lock only while its vote is
// open and within that validity ([round.Vote.InTime]); a node whose batch
// failed — not sent in time ([errTooLate]), its reply lost, late past the
// batch's deadline, cut by the node timeout, malformed — counts as failed
// for every lock of the batch, which may have been extended there all the
// same, so the failure rules of Extend apply ([validity.failed]). An entry
// that fails on a node fails only its own lock. The lock's op is held from
// before its entry is built until its vote is settled, so neither Extend
// nor Unlock crosses it.
type sweep struct {
	x     *extender
	began time.Time // when the round took its extensions
	n     int       // nodes

	mu      sync.Mutex
	entries []sweepEntry
	// stalled is set once the round reported that the nodes did not keep
	// up with it (see [sweep.stall]).
	stalled bool
}

// sweepEntry is one lock's extension in a sweep.
type sweepEntry struct {
	a        *autoExtension
	ttl      time.Duration
	q        int       // the lock's quorum
	deadline time.Time // when the lock must be reported lost unless extended: until less the guard
	// start is when the first batch that carries the lock was sent: its
	// extension's validity counts from it. Set under mu before that batch
	// leaves, and never once the entry settled.
	start    time.Time
	v        round.Vote
	answered int
	settled  bool
}

// sweepChunk is one batch of a sweep, sent to the nodes of one kind: every
// node that is one Redis master, or every node that is a Redis Cluster
// (whose batches hold the locks of one hash slot).
type sweepChunk struct {
	s       *sweep
	entries []int32 // indices in s.entries, in the batch's order
	req     *round.Request
	nodes   []int // the nodes it goes to
	// sendBy is when it is sent to a node at the latest: half a node
	// timeout before the first of its locks may no longer be extended
	// (see nodeSender).
	sendBy time.Time
}

// sweep runs a round for due, the extensions taken from the queue: it
// takes each lock's op, checks that it may still be extended, and sends
// the extensions in batches. The locks that may no longer be extended are
// left to their end (their expiry timer reports a loss).
func (x *extender) sweep(due []*autoExtension) {
	now := time.Now()
	s := &sweep{x: x, n: len(x.m.nodes), entries: make([]sweepEntry, 0, len(due))}
	var maxLag time.Duration
	behind := 0
	for _, a := range due {
		e, ok := x.entry(a, now)
		if !ok {
			continue
		}
		lag := time.Duration(x.clock(now) - a.at)
		maxLag = max(maxLag, lag)
		// Behind when the lag took more than half the margin its schedule
		// left between the extension's start and the loss guard: reported
		// while the lock still holds.
		if margin := time.Duration(x.clock(e.deadline) - a.at); lag > 0 && 2*lag > margin {
			behind++
		}
		s.entries = append(s.entries, e)
	}
	if len(s.entries) == 0 {
		return
	}
	slices.SortFunc(s.entries, func(a, b sweepEntry) int { return a.deadline.Compare(b.deadline) })
	s.began = now
	s.send()
	x.report(s, maxLag, behind)
}

// entry checks whether a's lock is to be extended in a round at now, and
// returns its entry with the lock's op held if it is. It is not when its
// auto-extension was stopped, an Extend or Unlock of it is under way (it is
// then tried again soon), it reached MaxHold, Do's context ended, it is
// lost, unlocked or the manager closed, or so little of its validity is
// left that an extension could not settle before the loss guard.
func (x *extender) entry(a *autoExtension, now time.Time) (sweepEntry, bool) {
	l := a.l
	x.mu.Lock()
	stopped := a.state != autoTaken
	locked := !stopped && l.op.TryLock()
	x.mu.Unlock()
	switch {
	case stopped:
		x.release(a)
		return sweepEntry{}, false
	case !locked:
		// An Extend that holds op queues the lock for the validity it
		// leaves instead of this retry ([extender.moved]).
		x.release(a)
		if wait, late, ok := a.retryWait(now); ok {
			x.schedule(a, now, wait, 0, late)
		} else {
			x.stop(l)
		}
		return sweepEntry{}, false
	}
	ttl, ok := a.extendTTL(now)
	if !ok {
		a.logMaxHold()
	}
	guard := l.cfg.lossGuard()
	if !ok || a.ctx.Err() != nil || l.extendable(now) != nil || !now.Before(l.Until().Add(-guard*3/2)) {
		l.op.Unlock()
		x.release(a)
		x.stop(l)
		return sweepEntry{}, false
	}
	l.extended = true
	if l.pend != nil && l.pend.Done() {
		// The acquire's replies are all in: the lock need not keep what
		// waited for them, some hundreds of bytes of each held lock.
		l.pend = nil
	}
	return sweepEntry{a: a, ttl: ttl, q: l.quorum(), deadline: l.Until().Add(-guard)}, true
}

// send builds the sweep's batches and sends each to its nodes, nearest
// deadline first: batches of the entries in their order for the nodes
// that are one master, batches of one hash slot each for the nodes that
// are Redis Clusters.
func (s *sweep) send() {
	m := s.x.m
	var plain, cluster []int
	for i, n := range m.nodes {
		if n.cluster {
			cluster = append(cluster, i)
		} else {
			plain = append(plain, i)
		}
	}
	order := make([]int32, len(s.entries))
	for e := range order {
		order[e] = int32(e)
	}
	var chunks []*sweepChunk
	if len(plain) > 0 {
		chunks = append(chunks, s.chunks(order, plain)...)
	}
	if len(cluster) > 0 {
		for _, slot := range s.bySlot(order) {
			chunks = append(chunks, s.chunks(slot, cluster)...)
		}
		slices.SortStableFunc(chunks, func(a, b *sweepChunk) int {
			return s.entries[a.entries[0]].deadline.Compare(s.entries[b.entries[0]].deadline)
		})
	}
	for _, c := range chunks {
		s.dispatch(c)
	}
}

// dispatch hands c to the senders of its nodes.
func (s *sweep) dispatch(c *sweepChunk) {
	for _, e := range c.entries {
		en := &s.entries[e]
		if by := en.end().Add(-en.a.l.cfg.timeout() / 2); c.sendBy.IsZero() || by.Before(c.sendBy) {
			c.sendBy = by
		}
	}
	for _, i := range c.nodes {
		s.x.m.nodes[i].sender.add(c)
	}
}

// begin records that c leaves for a node at now: each lock's extension
// counts from when the first batch carrying it left, set before that batch
// does.
func (s *sweep) begin(c *sweepChunk, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range c.entries {
		// A settled entry's start is read without mu (answer): it is
		// never written after the entry settled.
		if en := &s.entries[e]; !en.settled && en.start.IsZero() {
			en.start = now
		}
	}
}

// bySlot splits the entries of order by the hash slot of their keys, each
// slot's in order, the slots in the order of their first entry.
func (s *sweep) bySlot(order []int32) [][]int32 {
	at := map[uint16]int{}
	var slots [][]int32
	for _, e := range order {
		slot := keySlot(s.entries[e].a.l.rkeys[0])
		j, ok := at[slot]
		if !ok {
			j = len(slots)
			at[slot] = j
			slots = append(slots, nil)
		}
		slots[j] = append(slots[j], e)
	}
	return slots
}

// chunks cuts the entries of order into batches of at most x.entries
// locks and x.keys keys (a lock over more keys has a batch of its own),
// each to be sent to nodes. In a batch, consecutive locks of one kind and
// TTL make one group ([script.ExtendBatch]).
func (s *sweep) chunks(order []int32, nodes []int) []*sweepChunk {
	var out []*sweepChunk
	var ttlFor time.Duration
	var ttlArg string
	for len(order) > 0 {
		n := min(len(order), s.x.entries) // locks of one key, of one group: the common case
		c := &sweepChunk{s: s, nodes: nodes, entries: make([]int32, 0, n)}
		req := &round.Request{Op: opExtend, Script: script.ExtendBatch, Want: 1,
			Keys: make([]string, 0, n), Args: make([]string, 0, n+script.BatchHeader)}
		group, kind := -1, "" // the group's count in req.Args, and its kind
		for len(order) > 0 && len(c.entries) < s.x.entries {
			e := &s.entries[order[0]]
			l := e.a.l
			if len(c.entries) > 0 && len(req.Keys)+len(l.rkeys) > s.x.keys {
				break
			}
			if k := batchKind(l); group < 0 || k != kind || e.ttl != ttlFor {
				if group >= 0 {
					req.Args[group] = script.BatchCount(len(req.Args) - group - 1)
				}
				if e.ttl != ttlFor || ttlArg == "" {
					ttlFor, ttlArg = e.ttl, ttlMillis(e.ttl)
				}
				kind = k
				req.Args = append(req.Args, kind, ttlArg, "")
				group = len(req.Args) - 1
			}
			req.Keys = append(req.Keys, l.rkeys...)
			if kind == script.BatchLeader {
				req.Keys = append(req.Keys, companionKey(l))
			}
			req.Args = append(req.Args, l.secret)
			c.entries = append(c.entries, order[0])
			order = order[1:]
		}
		req.Args[group] = script.BatchCount(len(req.Args) - group - 1)
		req.Entries = len(c.entries)
		c.req = req
		out = append(out, c)
	}
	return out
}

// report sends the sweep's [EventRenewal] to the manager's hook and
// logger: lag is how late its most overdue extension started, behind how
// many started after half their margin. The log has at most one such
// round a second.
func (x *extender) report(s *sweep, lag time.Duration, behind int) {
	var err error
	if behind > 0 {
		err = fmt.Errorf("%w: %d of the %d extensions of a round started after half their margin; the most overdue %v late",
			ErrRenewalBehind, behind, len(s.entries), lag.Round(time.Millisecond))
	}
	x.emit(s, lag, len(s.entries), err)
}

// stall reports, at most once for s, that a node did not keep up with the
// round's extensions although the round started in time: a batch waited
// for the node more than half the time its first lock had to be sent, was
// not sent in time at all ([errTooLate]), or went unanswered until its
// deadline. It is called before the batch's locks are settled, so the
// report comes before any of them can be lost for it. wait is how long
// the batch waited, or went unanswered; what says it, of "a batch of n
// extensions", wait and the node's address, in that order.
func (s *sweep) stall(what string, locks int, wait time.Duration, node string) {
	s.mu.Lock()
	done := s.stalled
	s.stalled = true
	s.mu.Unlock()
	if done {
		return
	}
	s.x.emit(s, wait, locks, fmt.Errorf("%w: a batch of %d extensions "+what,
		ErrRenewalBehind, locks, wait.Round(time.Millisecond), node))
}

// emit sends an [EventRenewal] for s, of locks extensions, with lag and
// err. A report of falling behind is logged at most once a second.
func (x *extender) emit(s *sweep, lag time.Duration, locks int, err error) {
	cfg := &x.m.cfg
	logged := true
	if err != nil {
		c := x.clock(time.Now())
		x.mu.Lock()
		if x.lastBehind != 0 && c-x.lastBehind < int64(time.Second) {
			logged = false
		} else {
			x.lastBehind = c
		}
		x.mu.Unlock()
	}
	ctx := context.Background()
	if !cfg.wants(ctx, EventRenewal, err) {
		return
	}
	e := &Event{Kind: EventRenewal, Op: opExtend, Start: s.began, Duration: lag, For: locks, Err: err}
	ctx = cfg.observe(ctx, e)
	if logged {
		cfg.log(ctx, e)
	}
}

// wait is how long a batch carrying e, for l, sent at start, waits for a
// node: half the time l has left to send an extension (until a guard and a
// half before its validity ends), but at least its node timeout, and never
// past that time, so that no extension is in flight when the lock is
// reported lost. A batch's deadline is the first of its locks'.
//
// Longer than the node timeout while the lock has time: the nodes' replies
// count until the validity they would give ends, and a process short of
// CPU reads them late, all of a round's batches at once. Cut at the node
// timeout, the extensions of every lock of those batches would fail
// together, and be tried again together by a process that has not caught
// up; half the time left keeps room for that retry.
func (e *sweepEntry) wait(l *Lock, start time.Time) time.Duration {
	left := e.end().Sub(start)
	return min(left, max(l.cfg.timeout(), left/2))
}

// end is when e's lock may no longer be extended: half its loss guard
// before its deadline, so that a reply has time to count.
func (e *sweepEntry) end() time.Time {
	return e.deadline.Add(-e.a.l.cfg.lossGuard() / 2)
}

// batchKind is the kind of l's entry in a batch ([script.ExtendBatch]): a
// leadership's extends the leader's value with its lock key (see
// election.go).
func batchKind(l *Lock) string {
	switch c := &l.claim; {
	case l.cfg.leader != nil, l.cfg.owner != nil:
		return script.BatchLeader
	case c.kind == nil:
		return script.BatchLock(len(c.rkeys))
	case c.kind.extend == script.ReadExtend:
		return script.BatchRead
	}
	return script.BatchPermit
}

// companionKey is the key a [script.BatchLeader] entry of l extends with
// its lock key: an election's leader key, or a labelled lock's owner key.
func companionKey(l *Lock) string {
	if l.cfg.leader != nil {
		return script.LeaderKey(l.rkeys[0])
	}
	return script.OwnerKey(l.rkeys[0])
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// answer counts node b.Node's reply to the batch for each of its locks,
// and settles those whose vote it decides. A lock's vote closes once
// decided: a reply that comes after counts for nothing.
func (c *sweepChunk) answer(b round.BatchReply) {
	s := c.s
	var decided []int32
	s.mu.Lock()
	for j, e := range c.entries {
		en := &s.entries[e]
		if en.settled {
			continue
		}
		en.v.Count(b.Reply(j), s.n)
		en.answered++
		if en.answered == s.n || en.v.Settled(s.n, en.q, s.n-en.answered) {
			en.settled = true
			decided = append(decided, e)
		}
	}
	s.mu.Unlock()
	for _, e := range decided {
		s.settle(&s.entries[e])
	}
}

// settle settles en's extension, whose first batch left at en.start (zero
// when none did), as Extend does, lets its lock's op go and decides what
// follows. en is settled: begin no longer writes its start, which settle
// reads without mu.
func (s *sweep) settle(en *sweepEntry) {
	a := en.a
	start := en.start
	if start.IsZero() {
		// No batch carrying it left: no node applied it, and it fails
		// without bounding the validity.
		start = time.Now()
	}
	err := a.l.settleExtension(a.ctx, &en.v, en.ttl, start, true)
	a.l.op.Unlock()
	s.x.release(a)
	if s.x.released != nil {
		s.x.released(a.l)
	}
	s.x.after(a, en.ttl, err)
}
