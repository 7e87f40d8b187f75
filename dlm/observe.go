package dlm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// Observation is what [Election.Observe] and [Election.Leader] report of
// an election.
type Observation struct {
	// Leader reports whether the election has a leader: a quorum of the
	// nodes hold one candidate's grant and, beside it, the same value, the
	// one that candidate stored. A grant whose value no quorum holds alike
	// — not stored yet, or nodes that answer different values — reads as no
	// leader: a leader is never reported with one node's word for its
	// value.
	Leader bool
	// Value is the leader's value as given to [Election.Campaign], as a
	// quorum of the nodes hold it; "" when there is no leader.
	Value string
}

// ObservePoll is the longest [Election.Observe] goes without reading the
// nodes. Reads come sooner when a node announces a grant or a release (see
// [driver.Subscriber]), and when the leader's keys are due to expire.
const ObservePoll = time.Second

// Observe streams the state of the election: first the state when it
// starts, then every change — a new leader (even one with the same value),
// or none left. A reader that falls behind gets the latest state only,
// never a stale one. The channel is closed when ctx ends or the manager
// closes, and the goroutine behind it has returned by then.
//
// A leader is reported when a quorum of the nodes hold the same
// candidate's grant and the same value beside it (see [Observation]);
// none when no candidate can have a quorum, or when the nodes that hold a
// quorum's grant do not hold its value alike. One node, whatever it
// answers, neither makes a value the leader's nor hides one a quorum of the
// other nodes hold. While too many nodes fail to tell either, the last
// state stands. Changes are heard at once from the nodes' announcements of
// leaders and releases where the nodes can subscribe, and otherwise within
// [ObservePoll]; the end of a leader that stopped extending (a crash) is
// read when its keys expire on the nodes.
//
// Anyone allowed to publish on the election's channel can send
// announcements, so the reads they start are paced: for N nodes, up to
// 2(N+2) at once — two changes of leader, each announced by every node's
// release and two nodes' grants — then one per node timeout as the budget
// grows back, however many arrive. Under a flood of forged announcements a
// real change is read within a node timeout. Observe's own reads (at the
// leader's expiry, while the state is in flux, every ObservePoll) are not
// paced.
//
// The election's keys are untrusted: whoever may write under the prefix
// can store values of any size there. Observe never reads a value longer
// than a leader's (a secret, or a digest and [MaxLeaderValueLen] bytes); a
// node whose key holds one counts as holding no candidate's grant, or no
// value, and the answer is logged at Debug by its node and length. It
// needs +strlen of an ACL user.
func (e *Election) Observe(ctx context.Context) (<-chan Observation, error) {
	if err := e.readable(ctx); err != nil {
		return nil, err
	}
	out := make(chan Observation)
	e.m.life.work.Spawn(func() {
		defer close(out)
		e.observe(ctx, out)
	})
	return out, nil
}

// Leader reads the election's state once, as [Election.Observe] reports
// it: the leader and the value a quorum of the nodes hold for it, or none,
// also when no quorum holds the leader's value alike. It returns an error
// wrapping [ErrUnavailable] when too many nodes failed to answer within the
// node timeout to tell either, and the context's error when ctx ended
// first.
func (e *Election) Leader(ctx context.Context) (Observation, error) {
	if err := e.readable(ctx); err != nil {
		return Observation{}, err
	}
	r := e.read(ctx)
	switch {
	case ctx.Err() != nil:
		return Observation{}, fmt.Errorf("dlm: leader of %q: %w", e.name, ctx.Err())
	case !r.known:
		return Observation{}, fmt.Errorf("dlm: leader of %q: too few nodes answered: %w", e.name, ErrUnavailable)
	}
	return Observation{Leader: r.id != "", Value: r.value}, nil
}

// readable refuses a read of the election under a nil ctx, or once the
// manager closed.
func (e *Election) readable(ctx context.Context) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: nil Context", ErrInvalid)
	case e.m.life.closed.Load():
		return ErrClosed
	}
	return nil
}

// leaderRead is what one read of the nodes tells of an election.
type leaderRead struct {
	known bool   // a quorum settled the question: leader or none
	id    string // the digest of the leader's secret; "" for none
	value string
	flux  bool // none leads, but some node holds a grant
	// next is when to read again: at the leader's expiry, soon when the
	// state is in flux or unknown, at ObservePoll at the latest.
	next time.Duration
}

// observe runs Observe's goroutine.
func (e *Election) observe(ctx context.Context, out chan<- Observation) {
	m, cfg, rkey := e.m, &e.cfg, e.rkey
	var wake <-chan struct{}
	if m.waits.waker != nil {
		if w := m.waits.waker.Watch([]string{rkey}, "", 1); w != nil {
			defer w.Stop()
			wake = w.Woken()
			// A change announced before the subscriptions were made is in
			// the first read.
			w.Ready(ctx, cfg.timeout())
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	pace := readPace{every: cfg.timeout(), burst: observeBurst(len(m.nodes))}
	// A read an announcement asked for waits its turn on paced.
	var paced *time.Timer
	defer func() {
		if paced != nil {
			paced.Stop()
		}
	}()
	var (
		sent    bool   // a state was reported
		id      string // the state reported last
		pending *Observation
		flux    int // reads in a row that found the state in flux
		pacedC  <-chan time.Time
	)
	for {
		var send chan<- Observation
		var next Observation
		if pending != nil {
			send, next = out, *pending
		}
		woken := wake
		if pacedC != nil {
			woken = nil // one read waits its turn already
		}
		select {
		case <-ctx.Done():
			return
		case <-m.life.done:
			return
		case send <- next:
			pending = nil
			continue
		case <-timer.C:
		case <-pacedC:
			pace.spend(time.Now())
		case <-woken:
			now := time.Now()
			if at := pace.due(); now.Before(at) {
				paced = time.NewTimer(at.Sub(now))
				pacedC = paced.C
				continue
			}
			pace.spend(now)
		}
		// The read covers every announcement heard so far, and one that
		// waits its turn.
		select {
		case <-wake:
		default:
		}
		if pacedC != nil {
			paced.Stop()
			pacedC = nil
		}
		r := e.read(ctx)
		if ctx.Err() != nil {
			return
		}
		if r.known && (!sent || r.id != id) {
			sent, id = true, r.id
			pending = &Observation{Leader: r.id != "", Value: r.value}
		}
		if r.flux {
			// Back off while a stray grant lingers (a failed attempt's,
			// until its TTL).
			r.next = min(r.next<<min(flux, 10), ObservePoll)
			flux++
		} else {
			flux = 0
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(r.next)
	}
}

// observeBurst is how many reads announcements may start at once on an
// election of n nodes (see readPace): a change of leader is announced at
// most n+2 times, by every node's release and two nodes' grants, and two
// changes in a row are read at once.
func observeBurst(n int) int { return 2 * (n + 2) }

// readPace paces the reads of an election that announcements start:
// anyone allowed to publish on the election's channel can send them, and
// each would otherwise cost a read of every node. Over any span of time T,
// at most burst + T/every such reads start (rounded up): burst at once,
// then one per every, as the budget grows back.
type readPace struct {
	every time.Duration
	burst int
	// full is when the budget is whole again: every later for each read
	// spent, from now or from when it was whole already.
	full time.Time
}

// due returns when the next read an announcement asks for may start:
// when the budget has one read in it.
func (p *readPace) due() time.Time { return p.full.Add(-time.Duration(p.burst-1) * p.every) }

// spend takes one read, started at now, from the budget.
func (p *readPace) spend(now time.Time) {
	if now.After(p.full) {
		p.full = now
	}
	p.full = p.full.Add(p.every)
}

// leaderKeyMax is the longest value an election's lock key holds as
// script.Leader reads it: a secret, ':' and a leader value (a candidate of
// the previous release stored its value so). A longer value is measured on
// the node, never read.
var leaderKeyMax = strconv.Itoa(secretLen + 1 + MaxLeaderValueLen)

// leaderValueMax is the longest value of a leader key script.Leader reads:
// a digest and a leader value.
var leaderValueMax = strconv.Itoa(script.LeaderDigestLen + MaxLeaderValueLen)

// ignore counts node i's answer to a read of the election that no
// candidate can have written — a key longer than a candidate writes,
// which the script measured without reading it, or a reply the script
// cannot give — and logs it at Debug by its node and length, never its
// bytes. The answer counts as a node that holds no candidate's grant, or
// no value.
func (e *Election) ignore(ctx context.Context, i int, size int64) {
	n := e.ignored.Add(1)
	if !e.cfg.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	e.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "dlm: observe: leader value ignored as invalid",
		slog.String("key", e.rkey), slog.String("node", e.m.nodes[i].addr), slog.Int64("length", size), slog.Uint64("ignored", n))
}

// leaderAnswer is one node's answer to a read of the election.
type leaderAnswer struct {
	id       string // the digest of the holder's secret; "" for none
	value    string
	hasValue bool // the holder stored its value
	pttl     time.Duration
	err      error
}

// parse reads node i's reply to script.Leader into a. A reply no
// candidate can have caused is ignored (see ignore).
func (e *Election) parse(ctx context.Context, i int, res any, a *leaderAnswer) {
	vals, ok := res.([]any)
	if !ok || len(vals) > 3 {
		a.err = fmt.Errorf("leader script: unexpected reply of type %T", res)
		return
	}
	switch len(vals) {
	case 0:
		return
	case 1:
		// A lock key no candidate writes: the node holds no candidate's
		// grant.
		size, _ := vals[0].(int64)
		e.ignore(ctx, i, size)
		return
	}
	id, _ := vals[0].(string)
	pttl, _ := vals[1].(int64)
	if len(id) != script.LeaderDigestLen {
		e.ignore(ctx, i, int64(len(id)))
		return
	}
	a.id, a.pttl = id, time.Duration(pttl)*time.Millisecond
	if pttl < 0 { // a key without expiry: written by hand
		a.pttl = ObservePoll
	}
	if len(vals) < 3 {
		return // no value stored (yet)
	}
	switch v := vals[2].(type) {
	case string:
		if len(v) > MaxLeaderValueLen {
			e.ignore(ctx, i, int64(len(v))) // a node that does not run the script as given
			return
		}
		a.value, a.hasValue = v, true
	case int64:
		e.ignore(ctx, i, v) // a leader key longer than a candidate writes
	default:
		a.err = fmt.Errorf("leader script: unexpected value of type %T", v)
	}
}

// read reads the election on every node at once, each within the node
// timeout. A leader is known when a quorum of the nodes hold one
// candidate's grant and the same value beside it: a candidate leads only
// once a quorum stored its value (see [Election.Campaign]), and the digest
// that ties a value to a secret is no proof, since every observer reads
// it, so one node's value never decides alone. A quorum of grants whose
// value no quorum holds alike reads as none, as a winner that has yet to
// store its value does; a node whose value differs from the quorum's is
// counted and logged as ignore does.
func (e *Election) read(ctx context.Context) leaderRead {
	cfg := &e.cfg
	n, q := len(e.m.nodes), round.Majority(len(e.m.nodes))
	answers := make([]leaderAnswer, n)
	req := &round.Request{Op: "observe", Script: script.Leader, Keys: []string{e.rkey, script.LeaderKey(e.rkey)},
		Args: []string{leaderKeyMax, leaderValueMax}, Timeout: cfg.timeout()}
	e.m.rounds.Each(ctx, req, func(i int, res any, err error) {
		if err != nil {
			answers[i].err = err
			return
		}
		e.parse(ctx, i, res, &answers[i])
	})
	failed, best, bestID := 0, 0, ""
	counts := map[string]int{}
	for _, a := range answers {
		switch {
		case a.err != nil:
			failed++
		case a.id != "":
			counts[a.id]++
			if counts[a.id] > best {
				best, bestID = counts[a.id], a.id
			}
		}
	}
	// The value most of the nodes that hold bestID's grant hold beside it.
	held, value := 0, ""
	if best > 0 {
		values := map[string]int{}
		for _, a := range answers {
			if a.err == nil && a.id == bestID && a.hasValue {
				values[a.value]++
				if values[a.value] > held {
					held, value = values[a.value], a.value
				}
			}
		}
	}
	settle := max(cfg.timeout()/10, time.Millisecond)
	switch {
	case held >= q:
		// The leader loses its quorum when all but q-1 of the nodes that
		// hold its grant and value have expired them: read again then,
		// unless it was extended meanwhile.
		var pttls []time.Duration
		for i, a := range answers {
			switch {
			case a.err != nil || a.id != bestID || !a.hasValue:
			case a.value == value:
				pttls = append(pttls, a.pttl)
			default:
				e.ignore(ctx, i, int64(len(a.value))) // another value than the quorum's
			}
		}
		slices.Sort(pttls)
		return leaderRead{known: true, id: bestID, value: value, next: min(max(pttls[len(pttls)-q]+time.Millisecond, settle), ObservePoll)}
	case held+failed >= q:
		return leaderRead{next: min(4*cfg.timeout(), ObservePoll)} // the failed nodes may hold the value
	case best >= q:
		// A candidate won the lock and has yet to store its value on a
		// quorum, or the nodes disagree on it: it does not lead yet.
		return leaderRead{known: true, flux: true, next: settle}
	case best+failed >= q:
		return leaderRead{next: min(4*cfg.timeout(), ObservePoll)} // cannot tell
	case best > 0:
		// A grant or a release under way, or a failed attempt: none leads
		// now, and the next read may tell more.
		return leaderRead{known: true, flux: true, next: settle}
	}
	return leaderRead{known: true, next: ObservePoll}
}
