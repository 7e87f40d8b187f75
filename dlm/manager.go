package dlm

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// Manager takes locks on a fixed set of independent Redis masters by the
// Redlock algorithm: a lock is held when a majority of the nodes granted it
// within its validity time. With one node it is the plain single-instance
// lock. A Manager is safe for concurrent use; create one and share it.
type Manager struct {
	cfg   config
	nodes nodeSet // by node number
	// life is whether the manager is closed, and the work that ends when
	// it is.
	life lifetime
	// rounds sends requests to the nodes and counts their votes
	// (quorum.go).
	rounds *quorumRounds
	// waits is how the manager's callers wait (waiter.go).
	waits waiting
	// extender keeps the auto-extended locks extended (extender.go).
	extender *extender
	// rereleases sends again, in the background, the releases that may
	// have left a key behind (rerelease.go).
	rereleases *rereleases
	// plain takes free keys without a script; nil when no node implements
	// driver.Setter (setnx.go).
	plain *plainAcquire
	// servers compares what the nodes' servers say they are, so that one
	// server named twice never counts twice (sameserver.go); each node
	// keeps what its own said.
	servers *servers
	// wallNow reads the wall clock for Handle and Resume, and for the
	// tickets of the waiters; tests step it.
	wallNow func() time.Time
	// warnedPermits is set once a semaphore whose permits need every node
	// was logged (semaphore.go).
	warnedPermits atomic.Bool
	// redo is rereleases.redo, made once: a failed attempt hands it to
	// its release without allocating.
	redo round.Redo
}

// lifetime is a manager's life: whether it is closed, and the work that
// ends when it is.
type lifetime struct {
	closed atomic.Bool
	done   chan struct{} // closed by Close
	work   *round.Pool   // the goroutines of node requests and of the background work
	owned  bool          // Close closes the nodes (they came from Open)
}

// New returns a Manager over nodes, which must be distinct Redis masters
// (compared by [driver.Node.Addr]). The options become the defaults of every
// call. [Manager.Close] does not close nodes passed to New.
//
// New makes no round trip, and cannot tell one server named twice under
// two addresses (127.0.0.1:6379 and localhost:6379), which would count
// twice in every quorum; [Open] recognises it.
//
// An even number of nodes is allowed but tolerates no more failures than one
// node fewer; New logs a warning for it, on the logger of [WithLogger] or,
// without that option, on [slog.Default].
func New(nodes []driver.Node, opts ...ManagerOption) (*Manager, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", ErrInvalid)
	}
	cfg, err := defaultConfig().withManager(opts)
	if err != nil {
		return nil, err
	}
	m := &Manager{nodes: make(nodeSet, len(nodes)), cfg: cfg, life: lifetime{done: make(chan struct{}), work: round.NewPool()}, wallNow: time.Now}
	seen := make(map[string]int, len(nodes))
	for i, d := range nodes {
		if d == nil {
			return nil, fmt.Errorf("%w: node %d is nil", ErrInvalid, i)
		}
		n := newNode(i, d)
		if j, dup := seen[n.addr]; dup {
			return nil, fmt.Errorf("%w: nodes %d and %d are both %s; duplicates break the quorum arithmetic", ErrInvalid, j, i, n.addr)
		}
		seen[n.addr] = i
		m.nodes[i] = n
	}
	if err := m.nodes.checkAck(m.cfg.replicaAck); err != nil {
		return nil, err
	}
	id, err := newSecret()
	if err != nil {
		return nil, err
	}
	m.waits.id = id[:script.ManagerIDLen]
	m.waits.waker = wake.New(m.waits.id, m.nodes.drivers(), m.life.work.Spawn, m.cfg.timeout(), m.cfg.logger)
	m.plain = newPlainAcquire(m.nodes)
	m.servers = newServers(m.nodes, &m.cfg, m.life.work, m.life.done)
	for _, n := range m.nodes {
		n.call = nodeCall(n, m.cfg.replicaAck, m.plain, m.servers)
	}
	m.rounds = newQuorumRounds(round.New(m.life.work, m.nodes.calls(), m.nodes.nodeError, ErrNodeRestarted), m.nodes, m.life.work, m.life.done)
	m.extender = newExtender(m)
	m.rereleases = newRereleases(m.rounds.Round, m.life.work, m.nodes, &m.cfg.logging)
	m.redo = m.rereleases.redo
	if len(nodes)%2 == 0 {
		cfg.warnLogger().Warn("dlm: an even number of nodes tolerates no more failures than one node fewer",
			slog.Int("nodes", len(nodes)), slog.Int("quorum", round.Majority(len(nodes))))
	}
	return m, nil
}

// Open opens a node for each URL with [OpenNode], so one manager may mix
// client libraries, and returns a Manager over them as [New] does.
// [Manager.Close] closes the nodes Open opened. If any URL fails, the nodes
// already opened are closed again.
//
// Open then asks every node at once, within the node timeout, which server
// it is (its run_id, INFO server), and returns an error wrapping
// [ErrInvalid] naming both nodes when two URLs reach one server, as
// redis://127.0.0.1:6379 and redis://localhost:6379 do. A run_id is the
// node's own word: two nodes that say the same one are one server only if a
// value written through each, under a fresh key of the prefix, is read
// through the other. A node that says another's run_id but is another
// server counts as itself; one that fails that check does not take the
// other's place, and loses its own to the other if it said the run_id
// first (logged at Warn). A node that does not answer is asked before its
// first request; if it turns out to be the same server as another node, it
// fails every request, so that one server never counts twice in a quorum,
// and the manager logs it once at Warn (on [slog.Default] without
// [WithLogger]). A node that is a Redis Cluster, or whose server does not
// say its run_id (an ACL without +info), is not compared.
func Open(urls []string, opts ...ManagerOption) (*Manager, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no node URLs", ErrInvalid)
	}
	if _, err := defaultConfig().withManager(opts); err != nil {
		return nil, err // before opening nodes only to close them
	}
	seen := make(map[string]int, len(urls))
	for i, u := range urls {
		if err := checkNotBareAddr(u); err != nil {
			return nil, fmt.Errorf("dlm: node %d: %w", i, err)
		}
		cfg, err := driver.ParseURL(u)
		if err != nil {
			return nil, fmt.Errorf("dlm: node %d: %w", i, err)
		}
		if j, dup := seen[cfg.Name()]; dup {
			return nil, fmt.Errorf("%w: node URLs %d and %d both name %s; duplicates break the quorum arithmetic", ErrInvalid, j, i, cfg.Name())
		}
		seen[cfg.Name()] = i
	}
	nodes := make([]driver.Node, 0, len(urls))
	for i, u := range urls {
		n, err := OpenNode(u)
		if err != nil {
			closeAll(nodes)
			return nil, fmt.Errorf("dlm: node %d: %w", i, err)
		}
		nodes = append(nodes, n)
	}
	return openNodes(nodes, opts...)
}

// openNodes is Open's manager over the nodes it opened, which the manager
// owns: it closes them, when New fails too.
func openNodes(nodes []driver.Node, opts ...ManagerOption) (*Manager, error) {
	m, err := New(nodes, opts...)
	if err != nil {
		closeAll(nodes)
		return nil, err
	}
	m.life.owned = true
	m.servers.askServers()
	m.servers.opening.Store(true)
	err = m.servers.identifyAll(m.cfg.timeout())
	m.servers.opening.Store(false)
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Close stops the Manager: later calls return [ErrClosed]. It stops the
// auto-extension of every lock ([WithAutoExtend]) and waits for it and for
// the node requests still under way, each bounded by the node timeout, then
// closes the nodes the Manager opened ([Open]), not those given to [New].
// Locks still held are left to expire by their TTL; unlock them first.
//
// The releases the Manager retries in the background (see [Lock.Unlock])
// are each sent once more, at once, and Close waits for them as for the
// other node requests; none is retried after Close.
func (m *Manager) Close() error {
	if m.life.closed.Swap(true) {
		return nil
	}
	close(m.life.done)
	if m.waits.waker != nil {
		m.waits.waker.Close()
	}
	m.rereleases.close()
	m.life.work.Stop()
	if !m.life.owned {
		return nil
	}
	return closeAll(m.nodes.drivers())
}

// Nodes returns the addresses of the manager's nodes, in order.
func (m *Manager) Nodes() []string {
	return m.nodes.addrs()
}

// checkNotBareAddr refuses a node given as a bare address, such as
// "127.0.0.1:6379", with an error wrapping [driver.ErrBadURL] that names
// the URL to write instead: url.Parse would take the host for a scheme, or
// refuse it with a message that does not say what to write. A bare address
// is not taken as redis:// silently, since the node may need TLS.
func checkNotBareAddr(u string) error {
	if strings.Contains(u, "://") {
		return nil
	}
	if host, port, err := net.SplitHostPort(u); err == nil && port != "" && !strings.ContainsAny(host, "@/") {
		if _, err := strconv.Atoi(port); err == nil {
			return fmt.Errorf("%w %s: an address, not a URL: write redis://%s (or rediss://%s for TLS)", driver.ErrBadURL, u, u, u)
		}
	}
	return nil
}

func closeAll(nodes []driver.Node) error {
	var merr *multierror.Error
	for _, n := range nodes {
		if err := n.Close(); err != nil {
			merr = multierror.Append(merr, &NodeError{Node: n.Addr(), Err: err})
		}
	}
	return merr.ErrorOrNil()
}

// prepare checks a call's arguments and returns its configuration and the
// Redis keys of the lock.
func (m *Manager) prepare(ctx context.Context, keys []string, opts []Option) (config, []string, error) {
	if ctx == nil {
		return config{}, nil, fmt.Errorf("%w: nil Context", ErrInvalid)
	}
	if m.life.closed.Load() {
		return config{}, nil, ErrClosed
	}
	cfg, err := m.cfg.with(opts)
	if err != nil {
		return cfg, nil, err
	}
	rkeys := make([]string, len(keys))
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return cfg, nil, err
		}
		rkeys[i] = cfg.redisKey(k)
		if err := m.nodes.checkTag(k, rkeys[i]); err != nil {
			return cfg, nil, err
		}
	}
	if err := m.nodes.checkSlots(keys, rkeys); err != nil {
		return cfg, nil, err
	}
	return cfg, rkeys, nil
}

func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key of %d bytes: at most %d allowed", ErrInvalid, len(key), MaxKeyLen)
	}
	return nil
}

// redisKey is the Redis key of a lock: the prefix, then the key in braces as
// a Redis Cluster hash tag, so that every key derived from it by a suffix
// falls in the same hash slot.
func (c *config) redisKey(key string) string {
	return c.prefix + "{" + key + "}"
}
