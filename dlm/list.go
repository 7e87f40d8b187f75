package dlm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// Bounds of [Manager.List].
const (
	// DefaultListLimit is the most locks List reports when its limit is 0.
	DefaultListLimit = 1000
	// MaxListLimit is the largest limit List accepts.
	MaxListLimit = 100000
	// listScanCount is the COUNT of each SCAN step: the keys a node looks
	// at per request, whatever the pattern matches.
	listScanCount = 500
	// listFields is the number of values per lock key in a reply of
	// [script.List].
	listFields = 8
)

// LockInfo is what the nodes know of one lock key: an entry of
// [Listing.Locks]. It never holds a holder's secret.
type LockInfo struct {
	// Key is the lock's key, as given to [Manager.Lock].
	Key string
	// Held reports that a quorum of the nodes hold the key: someone holds
	// the lock (a writer, or readers).
	Held bool
	// HeldOn counts the nodes that hold the key.
	HeldOn int
	// Readers is the most readers holding the key on one node, for a read
	// lock ([Manager.RLock]); 0 for a writer's lock.
	Readers int
	// TTL is how long the key lives on a quorum of the nodes unless
	// extended: the quorum's shortest time to live; 0 when not Held.
	TTL time.Duration
	// Counter is the largest fencing counter of the key on the nodes (0
	// without fencing).
	Counter uint64
	// Waiters is the most live places in the key's line of waiters on one
	// node: the callers of every process waiting for it, as far as the
	// nodes know them.
	Waiters int
	// Owner and Since are the holder's label and the earliest grant time
	// among the nodes that hold it with that label, when it took the lock
	// [WithOwner] (see [NodeStatus]).
	Owner Owner
	Since time.Time
	// Nodes has an entry per node, in the manager's order: Held, Reserved,
	// TTL and Counter of this key there, and Err for a node that did not
	// answer in full.
	Nodes []NodeStatus
}

// Listing is what [Manager.List] found.
type Listing struct {
	// Locks are the lock keys found, sorted by key: those held on a node,
	// held by readers, or reserved for a waiter on one.
	Locks []LockInfo
	// Truncated reports that more keys matched than the limit, on a node:
	// Locks holds the first ones of that node's scan.
	Truncated bool
	// Nodes has an entry per node, in the manager's order: its address,
	// and Err for a node whose scan failed, whose locks may be missing.
	Nodes []NodeStatus
}

// List finds the locks held under the manager's key prefix on every node,
// for tools and monitoring: each lock's holders on a quorum, time left,
// fencing counter, readers and waiters. pattern selects the keys as Redis
// MATCH patterns do ("*", "job-*", "report-[0-9]"; "" is "*"), at most
// [MaxKeyLen] bytes. It neither takes nor changes anything, and never
// reveals a holder's secret.
//
// Each node is walked with SCAN (never KEYS), [listScanCount] keys per
// request, each request bounded by the node timeout; the walk ends when the
// node's keys are all seen, ctx ends, or a node has shown limit matching
// keys (0 for [DefaultListLimit], at most [MaxListLimit]), which sets
// [Listing.Truncated]. A node failure, ctx's end included, is reported in
// Listing.Nodes; the error is only for bad input or a closed manager.
// A Redis Cluster node ([driver.Sharded]) is reported as failed with
// [ErrInvalid]: its keys are spread over masters a script does not reach.
// Semaphores' permits are not listed. The caller's ACL needs SCAN, TYPE,
// TIME, GET, STRLEN, PTTL and ZCOUNT on the prefix's keys.
func (m *Manager) List(ctx context.Context, pattern string, limit int, opts ...Option) (*Listing, error) {
	cfg, _, err := m.prepare(ctx, []string{"*"}, opts)
	if err != nil {
		return nil, err
	}
	switch {
	case pattern == "":
		pattern = "*"
	case len(pattern) > MaxKeyLen:
		return nil, fmt.Errorf("%w: list pattern of %d bytes: at most %d allowed", ErrInvalid, len(pattern), MaxKeyLen)
	}
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, fmt.Errorf("%w: list limit %d: want 0 (%d) to %d", ErrInvalid, limit, DefaultListLimit, MaxListLimit)
	}
	match := globEscape(cfg.prefix) + "{" + pattern + "}"
	plen := strconv.Itoa(len(cfg.prefix) + 1)
	n := len(m.nodes)
	found := make([][]listEntry, n)
	nodes := make([]NodeStatus, n)
	truncated := make([]bool, n)
	m.life.work.ForEach(n, func(i int) {
		nodes[i].Node = m.nodes[i].addr
		if m.nodes[i].cluster {
			nodes[i].Err = &NodeError{Node: m.nodes[i].addr, Err: fmt.Errorf("%w: listing the locks of a Redis Cluster node is not supported", ErrInvalid)}
			return
		}
		found[i], truncated[i], nodes[i].Err = m.scanNode(ctx, i, cfg.timeout(), match, plen, cfg.prefix, limit)
	})
	return mergeListing(found, nodes, slices.Contains(truncated, true), round.Majority(n)), nil
}

// listEntry is what one node said of one lock key.
type listEntry struct {
	key     string // the lock's key, without the prefix and braces
	st      NodeStatus
	readers int
	waiters int
}

// scanNode walks node i's keys matching match, at most limit lock keys,
// each step bounded by timeout. It returns what it found, whether it
// stopped at the limit, and the failure that ended it early.
func (m *Manager) scanNode(ctx context.Context, i int, timeout time.Duration, match, plen, prefix string, limit int) ([]listEntry, bool, error) {
	var out []listEntry
	cursor := "0"
	count := strconv.Itoa(listScanCount)
	for {
		if err := ctx.Err(); err != nil {
			return out, false, &NodeError{Node: m.nodes[i].addr, Err: err}
		}
		req := &round.Request{Op: "list", Script: script.List, Args: []string{cursor, match, count, plen}, Timeout: timeout}
		v, err := m.rounds.One(ctx, i, req)
		if err != nil {
			return out, false, err
		}
		next, entries, err := parseListReply(v, m.nodes[i].addr, prefix)
		if err != nil {
			return out, false, &NodeError{Node: m.nodes[i].addr, Err: err}
		}
		for _, e := range entries {
			if len(out) == limit {
				return out, true, nil
			}
			out = append(out, e)
		}
		if next == "0" {
			return out, false, nil
		}
		cursor = next
	}
}

// parseListReply reads a reply of [script.List] from the node at addr: the
// next cursor and the lock keys under prefix. The reply is untrusted: a
// malformed one is an error, never a panic.
func parseListReply(v any, addr, prefix string) (string, []listEntry, error) {
	vals, ok := v.([]any)
	if !ok || len(vals) == 0 || (len(vals)-1)%listFields != 0 {
		return "", nil, fmt.Errorf("list script: unexpected reply of type %T", v)
	}
	next, ok := vals[0].(string)
	if !ok || next == "" || len(next) > 20 || strings.Trim(next, "0123456789") != "" {
		return "", nil, errors.New("list script: bad cursor in the reply")
	}
	out := make([]listEntry, 0, (len(vals)-1)/listFields)
	for j := 1; j < len(vals); j += listFields {
		k, _ := vals[j].(string)
		if len(k) < len(prefix)+2 || !strings.HasPrefix(k, prefix+"{") || !strings.HasSuffix(k, "}") {
			return "", nil, fmt.Errorf("list script: key of %d bytes outside the prefix in the reply", len(k))
		}
		var n [listFields - 2]int64 // state, PTTL, counter, waiters, readers, grant time
		for f := range n {
			x, ok := vals[j+1+f].(int64)
			if !ok {
				return "", nil, fmt.Errorf("list script: unexpected %T in the reply", vals[j+1+f])
			}
			n[f] = x
		}
		label, ok := vals[j+listFields-1].(string)
		if !ok {
			return "", nil, fmt.Errorf("list script: unexpected %T in the reply", vals[j+listFields-1])
		}
		st := NodeStatus{Node: addr, Reserved: n[0] == 3, Held: n[0] == 1 || n[0] == 2}
		if st.Held && n[1] > 0 {
			st.TTL = time.Duration(n[1]) * time.Millisecond
		}
		if n[2] > 0 {
			st.Counter = uint64(n[2])
		}
		if o := parseOwner(label); st.Held && n[5] > 0 && o != (Owner{}) {
			st.Owner, st.Since = o, nodeTime(n[5])
		}
		out = append(out, listEntry{key: k[len(prefix)+1 : len(k)-1], st: st, waiters: int(max(n[3], 0)), readers: int(max(n[4], 0))})
	}
	return next, out, nil
}

// mergeListing gathers what each node found into a Listing, a lock per
// key, q nodes making a quorum.
func mergeListing(found [][]listEntry, nodes []NodeStatus, truncated bool, q int) *Listing {
	byKey := make(map[string]*LockInfo)
	var keys []string
	for i, entries := range found {
		for _, e := range entries {
			li := byKey[e.key]
			if li == nil {
				li = &LockInfo{Key: e.key, Nodes: make([]NodeStatus, len(nodes))}
				for j := range nodes {
					li.Nodes[j] = NodeStatus{Node: nodes[j].Node, Err: nodes[j].Err}
				}
				byKey[e.key] = li
				keys = append(keys, e.key)
			}
			if li.Nodes[i].Held || li.Nodes[i].Reserved {
				continue // SCAN may return a key twice
			}
			li.Nodes[i] = e.st
			li.Nodes[i].Err = nodes[i].Err
			if e.st.Held {
				li.HeldOn++
			}
			li.Counter = max(li.Counter, e.st.Counter)
			if e.st.Owner != (Owner{}) && (li.Owner == Owner{} || li.Owner == e.st.Owner && e.st.Since.Before(li.Since)) {
				li.Owner, li.Since = e.st.Owner, e.st.Since
			}
			li.Readers = max(li.Readers, e.readers)
			li.Waiters = max(li.Waiters, e.waiters)
		}
	}
	slices.Sort(keys)
	out := &Listing{Locks: make([]LockInfo, 0, len(keys)), Truncated: truncated, Nodes: nodes}
	for _, k := range keys {
		li := byKey[k]
		li.Held = li.HeldOn >= q
		if li.Held {
			ttls := make([]time.Duration, 0, li.HeldOn)
			for _, st := range li.Nodes {
				if st.Held {
					ttls = append(ttls, st.TTL)
				}
			}
			slices.Sort(ttls)
			// The key lives on a quorum until the q-th longest TTL ends.
			li.TTL = ttls[len(ttls)-q]
		}
		out.Locks = append(out.Locks, *li)
	}
	return out
}

// globEscape returns s with the characters special to Redis MATCH
// patterns escaped, so that it matches itself.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ForcedNode is what [Manager.ForceUnlock] did on one node.
type ForcedNode struct {
	// Node is the node's address.
	Node string
	// Deleted counts the keys the node deleted: 0 where it held nothing.
	Deleted int
	// Err is the node's failure, if it did not answer.
	Err error
}

// ForceUnlock breaks the lock named key, whoever holds it, for an operator
// removing a stale lock: every node deletes the lock's key, a read lock's
// readers and a waiting writer's intent, and a semaphore's permits named
// key. The holder's next extension then finds the lock gone on a quorum
// and it is lost ([Lock.Lost], Do's context cancelled); until then, and if
// it is paused or not extending, the holder may still act as if it held
// the lock while another takes it. Only fencing ([WithFencing]) protects
// the resource from such a late write: the fencing counter is kept, so the
// next holder's token is greater. Waiters find the key free at their next
// attempt.
//
// Node failures are reported per node; the error is only for bad input or
// a closed manager.
func (m *Manager) ForceUnlock(ctx context.Context, key string, opts ...Option) ([]ForcedNode, error) {
	cfg, rkeys, err := m.prepare(ctx, []string{key}, opts)
	if err != nil {
		return nil, err
	}
	k := rkeys[0]
	out := make([]ForcedNode, len(m.nodes))
	req := &round.Request{Op: "force unlock", Script: script.ForceRelease,
		Keys: []string{k, k + script.ReadersSuffix, script.IntentKey(k), k + script.PermitsSuffix}, Timeout: cfg.timeout()}
	m.rounds.Each(ctx, req, func(i int, res any, err error) {
		out[i] = ForcedNode{Node: m.nodes[i].addr, Err: err}
		if err == nil {
			n, ok := res.(int64)
			if !ok || n < 0 || n > 4 {
				out[i].Err = &NodeError{Node: m.nodes[i].addr, Err: fmt.Errorf("force unlock script: unexpected reply %T", res)}
				return
			}
			out[i].Deleted = int(n)
		}
	})
	return out, nil
}
