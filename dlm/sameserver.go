package dlm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// One server named twice, as 127.0.0.1:6379 and localhost:6379, or
// through two DNS names, would count twice in every quorum: with three
// such nodes, one server alone would give a 3 of 3 majority. Addresses
// cannot tell (New compares them, and that is all it can), so a manager
// made by Open recognises a server by what it says it is: its run_id, from
// INFO server, read by script.ServerID.
//
// The invariant, for a manager made by Open: a node's answer counts in a
// vote only once the node's server has said its run_id and no other node
// of the manager has said the same one, or once it is known that the node
// cannot say (below). Of two nodes that say the same run_id, the one that
// said it first keeps counting and the other fails every request with a
// sameServerError, which matches ErrInvalid, without sending anything: the
// duplicate's votes never count. Open asks every node at once and refuses
// duplicates with ErrInvalid; a node that did not answer Open is asked
// before its first request, and a duplicate found then is logged once.
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
	idKnown                  // said a run_id no other node said
	idUnsaid                 // cannot say, or is not compared
	idDuplicate              // said the run_id of another node
)

// servers holds what the nodes said they are.
type servers struct {
	state []atomic.Int32
	mu    sync.Mutex
	ids   []string        // by node, once known
	dups  []error         // by node, once a duplicate: its *sameServerError
	errs  []error         // by node: why the last asking got no answer
	wait  []chan struct{} // by node: closed when the asking under way ends
}

// newServers returns the identities of n nodes: unknown, to be asked, when
// ask is set, but for the nodes marked in cluster; otherwise not compared.
func newServers(n int, cluster []bool, ask bool) *servers {
	s := &servers{state: make([]atomic.Int32, n), ids: make([]string, n), dups: make([]error, n), errs: make([]error, n), wait: make([]chan struct{}, n)}
	for i := range s.state {
		if !ask || (cluster != nil && cluster[i]) {
			s.state[i].Store(idUnsaid)
		}
	}
	return s
}

// sameServerError is the failure of node Node, the same server as node
// Of: both said the same run_id.
type sameServerError struct {
	Node, Of     int
	Addr, OfAddr string
}

func (e *sameServerError) Error() string {
	return fmt.Sprintf("node %d (%s) is the same server as node %d (%s), which said the same run_id (INFO server); its votes do not count",
		e.Node, e.Addr, e.Of, e.OfAddr)
}

// admit returns nil when node i's answers may count, and otherwise the
// node's failure: the error of a duplicate, or, while the node has not
// said what it is, the error of asking it. The asking runs on a goroutine
// of its own, at most one at a time per node, bounded by identifyTimeout
// rather than by ctx: a node whose first contact (a connection, its
// handshake and the question) takes longer than a request may is still
// identified, and counts from the request after the answer. Callers wait
// for the answer within ctx.
func (m *Manager) admit(ctx context.Context, i int) error {
	s := m.servers
	switch s.state[i].Load() {
	case idKnown, idUnsaid:
		return nil
	case idDuplicate:
		return s.dups[i]
	}
	s.mu.Lock()
	ch := s.wait[i]
	start := ch == nil && s.state[i].Load() == idUnknown
	if start {
		ch = make(chan struct{})
		s.wait[i] = ch
	}
	s.mu.Unlock()
	if start {
		m.work.Spawn(func() { m.identify(i, ch) })
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
	switch s.state[i].Load() {
	case idKnown, idUnsaid:
		return nil
	case idDuplicate:
		return s.dups[i]
	}
	return s.errs[i] // the asking failed: the next request asks again
}

// identifyTimeout bounds the asking of a node's run_id: a few node
// timeouts, and at least a second.
func (m *Manager) identifyTimeout() time.Duration {
	return max(4*m.cfg.timeout(), time.Second)
}

// identify asks node i for its run_id, records what it said, or why it
// could not say, and closes done. Close ends the asking.
func (m *Manager) identify(i int, done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), m.identifyTimeout())
	defer cancel()
	go func() {
		select {
		case <-m.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	id, why, err := m.askServerID(ctx, i)
	s := m.servers
	s.mu.Lock()
	s.wait[i] = nil
	s.errs[i] = err
	st := idUnknown
	if err == nil {
		st = s.record(m, i, id)
	}
	s.mu.Unlock()
	// Logged before the waiters wake, so that the log holds the duplicate
	// once its first request has failed.
	switch st {
	case idDuplicate:
		m.logServer(i, s.dups[i])
	case idUnsaid:
		m.logServer(i, why)
	}
	close(done)
}

// record stores what node i said, its run_id or "" for none, and returns
// the node's new state. s.mu is held.
func (s *servers) record(m *Manager, i int, id string) int32 {
	if id == "" {
		s.state[i].Store(idUnsaid)
		return idUnsaid
	}
	for j, other := range s.ids {
		if j != i && other == id && s.state[j].Load() == idKnown {
			s.dups[i] = &sameServerError{Node: i, Of: j, Addr: m.addrs[i], OfAddr: m.addrs[j]}
			s.state[i].Store(idDuplicate)
			return idDuplicate
		}
	}
	s.ids[i] = id
	s.state[i].Store(idKnown)
	return idKnown
}

// askServerID runs script.ServerID on node i. It returns the run_id; or ""
// and why when the server answered without one; or an error when the node
// did not answer, or answered that it cannot now (BUSY, LOADING, ...), so
// that it is asked again by its next request.
func (m *Manager) askServerID(ctx context.Context, i int) (id string, why, err error) {
	v, err := m.nodes[i].Eval(ctx, script.ServerID, nil, nil)
	if err != nil {
		if !answered(err) {
			return "", nil, fmt.Errorf("asking the server for its run_id: %w", err)
		}
		return "", fmt.Errorf("the run_id script failed: %w", err), nil
	}
	s, ok := v.(string)
	switch {
	case !ok:
		return "", fmt.Errorf("the run_id script answered a %T", v), nil
	case s == "":
		return "", errors.New("the server did not say its run_id (an ACL without +info?)"), nil
	case len(s) > maxServerID || strings.Trim(s, "0123456789abcdefABCDEF") != "":
		return "", fmt.Errorf("the run_id script answered %d bytes that are not a run_id", len(s)), nil
	}
	return strings.ToLower(s), nil, nil
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
// within timeout, and returns an error wrapping ErrInvalid, naming both
// nodes, when two of them are the same server. Nodes that do not answer
// are asked again before their first request.
func (m *Manager) identifyAll(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m.work.ForEach(len(m.nodes), func(i int) { m.admit(ctx, i) })
	for i := range m.nodes {
		if m.servers.state[i].Load() != idDuplicate {
			continue
		}
		var e *sameServerError
		if errors.As(m.servers.dups[i], &e) {
			return fmt.Errorf("%w: nodes %d (%s) and %d (%s) are one server, which said the same run_id (INFO server) to both; "+
				"duplicates break the quorum arithmetic", ErrInvalid, min(e.Of, e.Node), m.addrs[min(e.Of, e.Node)], max(e.Of, e.Node), m.addrs[max(e.Of, e.Node)])
		}
	}
	return nil
}

// logServer logs, once per node, what node i said: a duplicate at Warn,
// on slog.Default without WithLogger as New's warnings are, unless Open
// returns it; a node that cannot say at Info, on WithLogger's logger only.
func (m *Manager) logServer(i int, err error) {
	var dup *sameServerError
	if !errors.As(err, &dup) {
		if logger := m.cfg.logger; logger != nil {
			logger.Info("dlm: a node does not say which server it is; a server named twice is not recognised through it",
				slog.String("node", m.addrs[i]), slog.String("err", err.Error()))
		}
		return
	}
	if m.opening.Load() {
		return // Open returns it
	}
	logger := m.cfg.logger
	if !m.cfg.loggerSet {
		logger = slog.Default()
	}
	if logger != nil {
		logger.Warn("dlm: two nodes are one server; the duplicate's answers do not count",
			slog.String("node", m.addrs[i]), slog.String("same_as", dup.OfAddr), slog.String("err", err.Error()))
	}
}
