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

// Observation is what [Manager.Observe] reports of an election.
type Observation struct {
	// Leader reports whether the election has a leader: a quorum of the
	// nodes hold one candidate's grant.
	Leader bool
	// Value is the leader's value as given to [Manager.Campaign]; "" when
	// there is no leader.
	Value string
}

// ObservePoll is the longest [Manager.Observe] goes without reading the
// nodes. Reads come sooner when a node announces a grant or a release (see
// [driver.Subscriber]), and when the leader's keys are due to expire.
const ObservePoll = time.Second

// Observe streams the state of the election called name: first the state
// when it starts, then every change — a new leader (even one with the same
// value), or none left. A reader that falls behind gets the latest state
// only, never a stale one. The channel is closed when ctx ends or the
// manager closes, and the goroutine behind it has returned by then.
//
// A leader is reported when a quorum of the nodes hold the same candidate's
// grant; none when no candidate can have a quorum. While too many nodes fail
// to tell either, the last state stands. Changes are heard at once from the
// nodes' announcements of grants and releases where the nodes can subscribe,
// and otherwise within [ObservePoll]; the end of a leader that stopped
// extending (a crash) is read when its keys expire on the nodes. Options
// give the key prefix and the node timeout, as for [Manager.Campaign].
//
// The election's key is untrusted: whoever may write under the prefix can
// store a value of any size there. Observe never reads a value longer than
// a leader's (its secret, ':' and [MaxLeaderValueLen] bytes); a node whose
// key holds one counts as holding no candidate's grant, and the answer is
// logged at Debug by its node and length. It needs +strlen of an ACL user.
func (m *Manager) Observe(ctx context.Context, name string, opts ...Option) (<-chan Observation, error) {
	cfg, rkeys, err := m.electionKeys(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan Observation)
	m.work.Spawn(func() {
		defer close(out)
		m.observe(ctx, &cfg, rkeys[0], out)
	})
	return out, nil
}

// electionKeys is prepare for the election called name.
func (m *Manager) electionKeys(ctx context.Context, name string, opts []Option) (config, []string, error) {
	if ctx == nil {
		return config{}, nil, fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	cfg, err := m.cfg.with(opts)
	if err != nil {
		return cfg, nil, err
	}
	return m.prepare(ctx, []string{name}, append(slices.Clip(opts), WithKeyPrefix(cfg.prefix+electionPrefix)))
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
func (m *Manager) observe(ctx context.Context, cfg *config, rkey string, out chan<- Observation) {
	var wake <-chan struct{}
	if m.waker != nil {
		if w := m.waker.Watch([]string{rkey}, "", 1); w != nil {
			defer w.Stop()
			wake = w.Woken()
			// A change announced before the subscriptions were made is in
			// the first read.
			w.Ready(ctx, cfg.timeout())
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var (
		sent    bool   // a state was reported
		id      string // the state reported last
		pending *Observation
		flux    int // reads in a row that found the state in flux
	)
	for {
		var send chan<- Observation
		var next Observation
		if pending != nil {
			send, next = out, *pending
		}
		select {
		case <-ctx.Done():
			return
		case <-m.done:
			return
		case send <- next:
			pending = nil
			continue
		case <-timer.C:
		case <-wake:
		}
		r := m.readLeader(ctx, cfg, rkey)
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

// leaderKeyMax is the longest value a candidate's key holds, a secret, ':'
// and a leader value, as script.Leader's argument: a longer value is
// measured on the node, never read.
var leaderKeyMax = strconv.Itoa(secretLen + 1 + MaxLeaderValueLen)

// leaderIDLen is the length of a leader's id, a SHA-1 in hex.
const leaderIDLen = 40

// ignoreLeader counts node i's answer to a read of the election's key
// rkey that no candidate can have written — a value longer than
// [MaxLeaderValueLen], which the script measured without reading it, or a
// reply the script cannot give — and logs it at Debug by its node and
// length, never its bytes. The answer counts as a node that holds no
// candidate's grant.
func (m *Manager) ignoreLeader(ctx context.Context, cfg *config, rkey string, i int, size int64) {
	n := m.leadersIgnored.Add(1)
	if !cfg.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	cfg.logger.LogAttrs(ctx, slog.LevelDebug, "dlm: observe: leader value ignored as invalid",
		slog.String("key", rkey), slog.String("node", m.nodes[i].addr), slog.Int64("length", size), slog.Uint64("ignored", n))
}

// readLeader reads the election's key on every node at once, each within
// the node timeout. A node's answer that no candidate can have written is
// ignored (see ignoreLeader).
func (m *Manager) readLeader(ctx context.Context, cfg *config, rkey string) leaderRead {
	type answer struct {
		id, value string
		pttl      time.Duration
		err       error
	}
	n, q := len(m.nodes), round.Majority(len(m.nodes))
	answers := make([]answer, n)
	req := &round.Request{Op: "observe", Script: script.Leader, Keys: []string{rkey}, Args: []string{leaderKeyMax}, Timeout: cfg.timeout()}
	m.rounds.Each(ctx, req, func(i int, res any, err error) {
		if err != nil {
			answers[i].err = err
			return
		}
		vals, ok := res.([]any)
		switch {
		case ok && len(vals) == 0:
		case ok && len(vals) == 1:
			// A value no candidate writes: the node holds no candidate's
			// grant.
			size, _ := vals[0].(int64)
			m.ignoreLeader(ctx, cfg, rkey, i, size)
		case ok && len(vals) == 3:
			id, _ := vals[0].(string)
			value, _ := vals[1].(string)
			if len(id) != leaderIDLen || len(value) > MaxLeaderValueLen {
				// A node that does not run the script as given.
				m.ignoreLeader(ctx, cfg, rkey, i, int64(len(value)))
				return
			}
			answers[i].id, answers[i].value = id, value
			pttl, _ := vals[2].(int64)
			answers[i].pttl = time.Duration(pttl) * time.Millisecond
			if pttl < 0 { // a key without expiry: written by hand
				answers[i].pttl = ObservePoll
			}
		default:
			answers[i].err = fmt.Errorf("leader script: unexpected reply of type %T", res)
		}
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
	settle := max(cfg.timeout()/10, time.Millisecond)
	switch {
	case best >= q:
		// The leader loses its quorum when all but q-1 of its grants have
		// expired: read again then, unless it was extended meanwhile.
		var pttls []time.Duration
		value := ""
		for _, a := range answers {
			if a.err == nil && a.id == bestID {
				pttls = append(pttls, a.pttl)
				value = a.value
			}
		}
		slices.Sort(pttls)
		return leaderRead{known: true, id: bestID, value: value, next: min(max(pttls[len(pttls)-q]+time.Millisecond, settle), ObservePoll)}
	case best+failed >= q:
		return leaderRead{next: min(4*cfg.timeout(), ObservePoll)} // cannot tell
	case best > 0:
		// A grant or a release under way, or a failed attempt: none leads
		// now, and the next read may tell more.
		return leaderRead{known: true, flux: true, next: settle}
	}
	return leaderRead{known: true, next: ObservePoll}
}
