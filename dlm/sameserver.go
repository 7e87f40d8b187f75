package dlm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// One server named twice, as 127.0.0.1:6379 and localhost:6379, or
// through two DNS names, would count twice in every quorum: with three
// such nodes, one server alone would give a 3 of 3 majority. Addresses
// cannot tell (New compares them, and that is all it can), so a manager
// made by Open recognises a server by what it says it is, its run_id (INFO
// server, read by script.ServerID), and by what it holds: a run_id is the
// node's own word, which a hostile node, or a tamperer on a plaintext link,
// may give for another node's. So a node's run_id alone never takes a node
// out of the votes. Two nodes that say the same run_id are probed
// (script.ServerProbe): a fresh value written through the newcomer, read
// through the node that said the run_id first, then written through the
// latter and read through the newcomer. They are one server only if each
// read finds the other's value; two servers if the newcomer reads its own.
//
// The invariant, for a manager made by Open: no vote counts one server
// twice. A node's answer counts only once its server has said its run_id
// and no node of the manager admitted under the same run_id has been shown
// the same server, or once it is known that the node cannot say (below).
// Of the outcomes of a probe:
//   - one server: the newcomer fails every request with a sameServerError,
//     which matches ErrInvalid, without sending anything;
//   - two servers: both count, each as itself (a node that lied about its
//     run_id counts as the server it is);
//   - the newcomer did not do its part (no answer, an error, a value that
//     is neither): it is not admitted, and is asked again by its next
//     request;
//   - the node admitted first did not do its part, while the newcomer did:
//     the newcomer takes its place. The node admitted first is asked again
//     before its next request, and probed against the newcomer then. So a
//     node that says another's run_id and then serves nothing (the denial
//     of service this guards against) loses its place to the node it
//     named, rather than keeping it out.
//
// Taking a place must not let both nodes count in one vote, should they be
// one server after all: every request a node is admitted for records its
// deadline (the round's: the requests of one round share it), and the
// newcomer counts only in requests whose deadline is after the latest one
// recorded for the node whose place it took. Since that node is admitted to
// no request once its place is taken, a round either counted it, and its
// deadline is not after that one, or never will.
//
// Open asks every node at once and refuses nodes shown to be one server
// with ErrInvalid, waiting for a probe under way; a node that did not
// answer Open is asked before its first request, and a duplicate found
// then is logged once.
//
// Not compared:
//   - the nodes given to New, which makes no round trip and leaves the
//     nodes to the caller: asking them before their first request would
//     add a round trip to it, which the caller did not ask for;
//   - a node that is a Redis Cluster (driver.Sharded): its requests go to
//     the master of their key's slot, and a run_id is one shard's;
//   - a node whose server answers the script with anything but a run_id:
//     an ACL without +info or +evalsha, a node that runs no Lua and does
//     not know the script (memlock's node knows it, and answers an id of
//     its own) — logged once at Info on WithLogger's logger.
//
// A run_id is asked once per node: a server restarted later has a new
// run_id, which no comparison sees, so a restart is never taken for a
// duplicate. Nor does a node whose server changes (a Sentinel failover)
// get compared again: at first contact, two nodes with one run_id were one
// server at that moment, which is what a quorum must not count twice. The
// price is that a server restarted between its first contact through one
// name and its first through another is not recognised.

// maxServerID bounds the run_id a node may answer: Redis' are 40
// hexadecimal digits.
const maxServerID = 64

// Identity states of a node.
const (
	idUnknown   int32 = iota // not asked yet, or the node did not answer
	idKnown                  // said a run_id, and is no other admitted node's server
	idUnsaid                 // cannot say, or is not compared
	idDuplicate              // shown to be the server of another node
)

// identity is what a node said it is, and the requests it was admitted
// to: a node's part of the comparison of servers.
type identity struct {
	state atomic.Int32
	// admitted is the latest deadline of a request the node was admitted
	// to, in ns on the monotonic clock (see clockAt); from is the deadline
	// a request of the node must end after to count, set when the node
	// took the place of another.
	admitted atomic.Int64
	from     atomic.Int64

	// Guarded by the manager's servers.mu.
	runID   string        // once known
	dup     error         // once a duplicate: its *sameServerError
	err     error         // why the last asking got no answer
	wait    chan struct{} // closed when the asking under way ends
	probing bool          // its run_id is being compared
}

// servers compares what the nodes' servers say they are, so that one
// server named twice never counts twice: it holds what the comparison
// shares, and each node keeps its own part in its identity.
type servers struct {
	nodes nodeSet
	cfg   *config // the manager's: its node timeout, key prefix and logger
	work  *round.Pool
	done  <-chan struct{} // closed when the manager closes: the asking ends
	// settling is held while a node's run_id is compared with the
	// others', probes included: two nodes that say one run_id are never
	// both compared with a third only.
	settling sync.Mutex
	// mu guards the fields of the nodes' identities that say so.
	mu sync.Mutex
	// opening is set while Open asks the nodes for their run_ids.
	opening atomic.Bool
}

// newServers returns the comparison of the servers of nodes, whose
// manager has the configuration cfg, runs its work on work and closes
// done when it closes.
func newServers(nodes nodeSet, cfg *config, work *round.Pool, done <-chan struct{}) *servers {
	return &servers{nodes: nodes, cfg: cfg, work: work, done: done}
}

// askServers makes every node's server unknown, to be asked, but for the
// nodes that are Redis Clusters. Until it is called, no node is compared
// (see newNode).
func (s *servers) askServers() {
	for _, n := range s.nodes {
		if !n.cluster {
			n.ident.state.Store(idUnknown)
		}
	}
}

// clockBase is the origin of the deadlines servers records: their
// monotonic readings, as ns since it.
var clockBase = time.Now()

// clockAt returns t as ns since clockBase, by the monotonic clock when t
// has its reading, as the deadlines of time.Now().Add do.
func clockAt(t time.Time) int64 { return int64(t.Sub(clockBase)) }

// enter admits n, known, to a request bounded by ctx: it records the
// request's deadline, then reports whether the node is still known (a
// node whose place was taken meanwhile is not), and, when it is, the
// error of a request that may not count: one whose deadline is not after
// that of the requests of the node whose place n took.
func (n *node) enter(ctx context.Context) (known bool, err error) {
	id := &n.ident
	d := int64(math.MaxInt64) // no deadline: later than any
	if dl, ok := ctx.Deadline(); ok {
		d = clockAt(dl)
	}
	for {
		cur := id.admitted.Load()
		if d <= cur || id.admitted.CompareAndSwap(cur, d) {
			break
		}
	}
	// After the record: a node whose place is taken is first marked,
	// then its record read, so either this request is in the record
	// read, or it sees the mark.
	if id.state.Load() != idKnown {
		return false, nil
	}
	if d <= id.from.Load() {
		return true, errPlaceTaken
	}
	return true, nil
}

// errPlaceTaken fails a request of a node that took another's place, in
// a round that may have counted the other: a vote counts one of them.
var errPlaceTaken = errors.New("this node took the place of another that said the same run_id and did not confirm it; it counts from its next request")

// sameServerError is the failure of node Node, the same server as node
// Of: both said the same run_id, and a value written through each was read
// through the other.
type sameServerError struct {
	Node, Of     int
	Addr, OfAddr string
}

func (e *sameServerError) Error() string {
	return fmt.Sprintf("node %d (%s) is the same server as node %d (%s): both said one run_id (INFO server), and what was written through one was read through the other; its votes do not count",
		e.Node, e.Addr, e.Of, e.OfAddr)
}

// admit returns nil when node i's answers may count in a request bounded
// by ctx, and otherwise the node's failure: the error of a duplicate, or,
// while the node has not said what it is, the error of asking it. The
// asking runs on a goroutine of its own, at most one at a time per node,
// bounded by identifyTimeout rather than by ctx: a node whose first
// contact (a connection, its handshake and the question) takes longer
// than a request may is still identified, and counts from the request
// after the answer. Callers wait for the answer within ctx.
func (s *servers) admit(ctx context.Context, i int) error {
	n := s.nodes[i]
	id := &n.ident
	switch id.state.Load() {
	case idUnsaid:
		return nil
	case idKnown:
		if known, err := n.enter(ctx); known {
			return err
		}
	case idDuplicate:
		return id.dup
	}
	s.mu.Lock()
	ch := id.wait
	start := ch == nil && id.state.Load() == idUnknown
	if start {
		ch = make(chan struct{})
		id.wait = ch
	}
	s.mu.Unlock()
	if start {
		s.work.Spawn(func() { s.identify(i, ch) })
	}
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("asking the server for its run_id: %w", ctx.Err())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch id.state.Load() {
	case idUnsaid:
		return nil
	case idKnown:
		if known, err := n.enter(ctx); known {
			return err
		}
	case idDuplicate:
		return id.dup
	}
	if id.err == nil {
		return errors.New("asking the server for its run_id: asked again, after another node took its place")
	}
	return id.err // the asking failed: the next request asks again
}

// identifyTimeout bounds the asking of a node's run_id, its probes
// included: a few node timeouts, and at least a second.
func (s *servers) identifyTimeout() time.Duration {
	return max(4*s.cfg.timeout(), time.Second)
}

// identify asks node i for its run_id, compares it with the others' (see
// [servers.compareServer]), records what it found, or why it could not say, and
// closes done. Close ends the asking.
func (s *servers) identify(i int, done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), s.identifyTimeout())
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	id, why, err := s.askServerID(ctx, i)
	st, took := idUnknown, []int(nil)
	if err == nil {
		st, took, err = s.compareServer(ctx, i, id)
	}
	ident := &s.nodes[i].ident
	s.mu.Lock()
	ident.wait = nil
	ident.err = err
	s.mu.Unlock()
	// Logged before the waiters wake, so that the log holds the duplicate
	// once its first request has failed.
	switch st {
	case idDuplicate:
		s.logServer(i, ident.dup)
	case idUnsaid:
		s.logServer(i, why)
	}
	for _, j := range took {
		s.logPlaceTaken(i, j)
	}
	close(done)
}

// Outcomes of a probe of two nodes that said one run_id.
const (
	probeSame     = iota // one server
	probeOther           // two servers
	probeNewcomer        // the node asked last did not do its part
	probeAdmitted        // the node admitted first did not do its part
)

// compareServer compares node i's run_id id ("" for none) with those of the
// nodes admitted under it, probing each, and records the outcome (see the
// comment at the top of this file): i's new state, the nodes whose place
// i took, and why i is still unknown when it is.
func (s *servers) compareServer(ctx context.Context, i int, id string) (int32, []int, error) {
	self := &s.nodes[i].ident
	if id == "" {
		self.state.Store(idUnsaid)
		return idUnsaid, nil, nil
	}
	s.mu.Lock()
	self.probing = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		self.probing = false
		s.mu.Unlock()
	}()
	s.settling.Lock()
	defer s.settling.Unlock()
	s.mu.Lock()
	var same []int
	for j, other := range s.nodes {
		if j != i && other.ident.runID == id && other.ident.state.Load() == idKnown {
			same = append(same, j)
		}
	}
	s.mu.Unlock()
	var took []int
	for _, j := range same {
		outcome, err := s.probe(ctx, i, j)
		switch outcome {
		case probeSame:
			s.mu.Lock()
			self.dup = &sameServerError{Node: i, Of: j, Addr: s.nodes[i].addr, OfAddr: s.nodes[j].addr}
			self.state.Store(idDuplicate)
			s.mu.Unlock()
			return idDuplicate, nil, nil
		case probeNewcomer:
			return idUnknown, nil, err
		case probeAdmitted:
			took = append(took, j)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	from := self.from.Load()
	for _, j := range took {
		// Marked first, then its record read: see enter.
		other := &s.nodes[j].ident
		other.state.Store(idUnknown)
		other.runID = ""
		from = max(from, other.admitted.Load())
	}
	self.from.Store(from)
	self.runID = id
	self.state.Store(idKnown)
	return idKnown, took, nil
}

// probe tells whether nodes i and j, which said one run_id, are one
// server: it writes a fresh value under a fresh key through i, then
// another through j, which answers what it found, then a third through i,
// which answers what it found (script.ServerProbe). One server: j found
// i's value, or i found j's. Two: j did not find i's, and i found its own.
// A node that fails its part, or answers anything else, leaves the
// question open: probeNewcomer when it is i, probeAdmitted when it is j.
// The key lives for twice identifyTimeout, which bounds the probe.
func (s *servers) probe(ctx context.Context, i, j int) (int, error) {
	var vals [4]string // the nonce, then a value per step
	for k := range vals {
		v, err := newSecret()
		if err != nil {
			return probeNewcomer, err
		}
		vals[k] = v
	}
	keys := []string{script.ProbeKey(s.cfg.prefix, vals[0])}
	ttl := fmt.Sprint((2 * s.identifyTimeout()).Milliseconds())
	step := func(ctx context.Context, n int, value string) (string, error) {
		v, err := s.nodes[n].drv.Eval(ctx, script.ServerProbe, keys, []string{value, ttl})
		if err != nil {
			return "", err
		}
		found, _ := v.(string) // nil: the key was not there
		return found, nil
	}
	fail := func(n int, err error) error {
		return fmt.Errorf("node %d (%s) said the run_id of node %d (%s); checking whether they are one server, node %s failed: %w",
			i, s.nodes[i].addr, j, s.nodes[j].addr, s.nodes[n].addr, err)
	}
	if _, err := step(ctx, i, vals[1]); err != nil {
		return probeNewcomer, fail(i, err)
	}
	// Node j answered its run_id before, on a connection it keeps: it
	// has a request's time, the node timeout, as in every round. The
	// time node i left it is not held against it.
	jctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
	found, err := step(jctx, j, vals[2])
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return probeNewcomer, fail(i, ctx.Err())
	case err != nil:
		return probeAdmitted, fail(j, err)
	case found == vals[1]:
		return probeSame, nil
	}
	found, err = step(ctx, i, vals[3])
	switch {
	case err != nil:
		return probeNewcomer, fail(i, err)
	case found == vals[2]:
		return probeSame, nil
	case found == vals[1]:
		return probeOther, nil
	}
	return probeNewcomer, fail(i, errors.New("it did not read back the value written through it"))
}

// askServerID runs script.ServerID on node i. It returns the run_id; or ""
// and why when the server answered without one; or an error when the node
// did not answer, or answered that it cannot now (BUSY, LOADING, ...), so
// that it is asked again by its next request.
func (s *servers) askServerID(ctx context.Context, i int) (id string, why, err error) {
	v, err := s.nodes[i].drv.Eval(ctx, script.ServerID, nil, nil)
	if err != nil {
		if !answered(err) {
			return "", nil, fmt.Errorf("asking the server for its run_id: %w", err)
		}
		return "", fmt.Errorf("the run_id script failed: %w", err), nil
	}
	said, ok := v.(string)
	switch {
	case !ok:
		return "", fmt.Errorf("the run_id script answered a %T", v), nil
	case said == "":
		return "", errors.New("the server did not say its run_id (an ACL without +info?)"), nil
	case len(said) > maxServerID || strings.Trim(said, "0123456789abcdefABCDEF") != "":
		return "", fmt.Errorf("the run_id script answered %d bytes that are not a run_id", len(said)), nil
	}
	return strings.ToLower(said), nil, nil
}

// answered reports whether err is a server's error reply, which starts
// with its code in capitals ("ERR ...", "NOPERM ..."), other than one of a
// server that will answer later ([driver.Transient]); a transport error or
// a timeout is not.
func answered(err error) bool {
	msg := err.Error()
	code, _, _ := strings.Cut(msg, " ")
	if len(code) < 2 || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != "" || driver.Transient(msg) {
		return false
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// identifyAll asks every node that has not said what it is at once, each
// within timeout, and then waits for the probes under way of the nodes
// that said a run_id another node said (each bounded by identifyTimeout).
// It returns an error wrapping ErrInvalid, naming both nodes, when two of
// them are shown to be the same server. Nodes that do not answer are asked
// again before their first request.
func (s *servers) identifyAll(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s.work.ForEach(len(s.nodes), func(i int) { s.admit(ctx, i) })
	for _, n := range s.nodes {
		s.mu.Lock()
		ch, probing := n.ident.wait, n.ident.probing
		s.mu.Unlock()
		if probing && ch != nil {
			<-ch
		}
	}
	for _, n := range s.nodes {
		if n.ident.state.Load() != idDuplicate {
			continue
		}
		var e *sameServerError
		if errors.As(n.ident.dup, &e) {
			return fmt.Errorf("%w: nodes %d (%s) and %d (%s) are one server: both said one run_id (INFO server), and what was written through one was read through the other; "+
				"duplicates break the quorum arithmetic", ErrInvalid, min(e.Of, e.Node), s.nodes[min(e.Of, e.Node)].addr, max(e.Of, e.Node), s.nodes[max(e.Of, e.Node)].addr)
		}
	}
	return nil
}

// logServer logs, once per node, what node i said: a duplicate at Warn,
// on slog.Default without WithLogger as New's warnings are, unless Open
// returns it; a node that cannot say at Info, on WithLogger's logger only.
func (s *servers) logServer(i int, err error) {
	var dup *sameServerError
	if !errors.As(err, &dup) {
		if logger := s.cfg.logger; logger != nil {
			logger.Info("dlm: a node does not say which server it is; a server named twice is not recognised through it",
				slog.String("node", s.nodes[i].addr), slog.String("err", err.Error()))
		}
		return
	}
	if s.opening.Load() {
		return // Open returns it
	}
	if logger := s.cfg.warnLogger(); logger != nil {
		logger.Warn("dlm: two nodes are one server; the duplicate's answers do not count",
			slog.String("node", s.nodes[i].addr), slog.String("same_as", dup.OfAddr), slog.String("err", err.Error()))
	}
}

// logPlaceTaken logs at Warn that node i took the place of node j: both
// said one run_id, and j failed to confirm it. It is logged during Open
// too, which does not fail for it.
func (s *servers) logPlaceTaken(i, j int) {
	if logger := s.cfg.warnLogger(); logger != nil {
		logger.Warn("dlm: two nodes said one run_id, and the one that said it first did not confirm it: the other counts in its place until it proves to be another server",
			slog.String("node", s.nodes[i].addr), slog.String("in_place_of", s.nodes[j].addr))
	}
}

// admitCall runs next on node i once the node is admitted (see
// [servers.admit]), and fails with the reason it is not otherwise.
func (s *servers) admitCall(i int, next round.Call) round.Call {
	return func(ctx context.Context, req *round.Request) (any, error) {
		if err := s.admit(ctx, i); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}
