package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// exampleNodes returns n in-memory nodes for the examples, which cannot
// start Redis. Real code opens its nodes with dlm.Open and Redis URLs, with
// a backend imported for its side effect:
//
//	import _ "github.com/dlmgo/redlock/backends/goredis"
//
//	m, err := dlm.Open([]string{"redis+goredis://10.0.0.1:6379", ...})
func exampleNodes(n int) []driver.Node {
	nodes := make([]driver.Node, n)
	for i := range nodes {
		nodes[i] = &memNode{addr: fmt.Sprintf("mem-%d:6379", i), keys: map[string]memEntry{}}
	}
	return nodes
}

// forgetKeys makes nodes lose every key, as Redis restarted without
// persistence would.
func forgetKeys(nodes ...driver.Node) {
	for _, n := range nodes {
		mn := n.(*memNode)
		mn.mu.Lock()
		clear(mn.keys)
		mn.mu.Unlock()
	}
}

// memNode is a driver.Node keeping its keys in memory. It runs dlm's
// acquire, extend and release scripts in Go, recognising each by the Redis
// command only it uses, and rejects any other script.
type memNode struct {
	addr string
	mu   sync.Mutex
	keys map[string]memEntry
	// sets are the read locks' and semaphores' leases: token to end.
	sets map[string]map[string]time.Time
}

type memEntry struct {
	val string
	exp time.Time
}

var _ driver.Node = (*memNode)(nil)

func (n *memNode) Addr() string { return n.addr }
func (n *memNode) Close() error { return nil }

func (n *memNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	src := s.Source
	switch {
	case strings.Contains(src, "while a <= #ARGV do"): // batched extension
		return n.extendBatch(keys, args)
	case strings.Contains(src, "spanLeases"):
		// A read lock's scripts name the readers' set second.
		return n.lease(leaseOp(src), len(keys) > 1 && strings.HasSuffix(keys[1], ":readers"), keys, args)
	}
	switch {
	case strings.Contains(src, fencedMark): // fenced acquire
		return nil, errors.New("ERR script not supported by the example node")
	case strings.Contains(src, "ARGV[1], 'PX'"): // acquire
		keys = lockKeys(keys)
		for _, k := range keys {
			if v, ok := n.get(k); ok && !heldBy(v, args[0]) {
				if v == "dlm:readers" && strings.HasSuffix(args[len(args)-1], "w") { // a waiting writer
					n.keys[k+":wait"] = memEntry{val: "1", exp: time.Now().Add(ttlArg(args[1]))}
				}
				return int64(0), nil
			}
		}
		for _, k := range keys {
			delete(n.keys, k+":wait")
		}
		return n.setAll(keys, args)
	case strings.Contains(src, "'DEL'"): // release
		keys = lockKeys(keys)
		var deleted int64
		for _, k := range keys {
			if v, ok := n.get(k); ok && heldBy(v, args[0]) {
				delete(n.keys, k)
				deleted++
			}
		}
		return deleted, nil
	case strings.Contains(src, "'PEXPIRE'"): // extend
		return n.extend(keys, args)
	}
	return nil, errors.New("ERR script not supported by the example node")
}

// extend is the mutex's extension: every key set to args[1] ms if all hold
// the secret args[0]; n.mu is held.
func (n *memNode) extend(keys, args []string) (any, error) {
	for _, k := range keys {
		if v, _ := n.get(k); !heldBy(v, args[0]) {
			return int64(0), nil
		}
	}
	return n.setAll(keys, args)
}

// extendBatch runs the batched extension: groups of entries of one kind
// and TTL (ARGV: the kind, the TTL, the count, then each entry's secret),
// each entry extended on its own keys, taken from KEYS in turn, with a
// reply of its own: a lock over n keys ("n"), a reader ("r": the lock key
// and the readers' set) or a permit ("p": the set of permits). n.mu is
// held.
func (n *memNode) extendBatch(keys, args []string) (any, error) {
	out := []any{}
	for len(args) >= 3 {
		kind, ttl := args[0], args[1]
		count, err := strconv.Atoi(args[2])
		if err != nil || count < 0 || count > len(args)-3 {
			return nil, errors.New("ERR batch arguments do not match its keys")
		}
		take := 1
		switch kind {
		case "r":
			take = 2
		case "p":
		default:
			take, _ = strconv.Atoi(kind)
		}
		for _, secret := range args[3 : 3+count] {
			if take < 1 || take > len(keys) {
				return nil, errors.New("ERR batch arguments do not match its keys")
			}
			var r any
			switch kind {
			case "r", "p":
				r, err = n.lease("extend", kind == "r", keys[:take], []string{secret, ttl})
			default:
				r, err = n.extend(keys[:take], []string{secret, ttl})
			}
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			keys = keys[take:]
		}
		args = args[3+count:]
	}
	return out, nil
}

// leaseOp tells a lease script by the command only it uses: "release",
// "read acquire", "permit acquire", or "extend".
func leaseOp(src string) string {
	switch {
	case strings.Contains(src, "'ZREM', KEYS["):
		return "release"
	case strings.Contains(src, "KEYS[3]"):
		return "read acquire"
	case strings.Contains(src, "'ZCARD'"):
		return "permit acquire"
	}
	return "extend"
}

// fencedMark is a line only the fenced acquire scripts have.
const fencedMark = "local fx = tonumber(ARGV[3])"

// lockKeys are the lock keys among the keys of the mutex's acquire or
// release: each comes with the two keys of its line of waiters, which the
// example node does not keep (it never makes anyone wait).
func lockKeys(keys []string) []string { return keys[:len(keys)/3] }

// get returns the live value of key; n.mu is held.
func (n *memNode) get(key string) (string, bool) {
	e, ok := n.keys[key]
	if ok && !time.Now().Before(e.exp) {
		delete(n.keys, key)
		return "", false
	}
	return e.val, ok
}

// setAll sets every key to args[0] with a TTL of args[1] ms and replies 1;
// n.mu is held.
func (n *memNode) setAll(keys, args []string) (any, error) {
	ms, err := strconv.Atoi(args[1])
	if err != nil || ms <= 0 {
		return nil, errors.New("ERR invalid expire time")
	}
	for _, k := range keys {
		n.keys[k] = memEntry{val: args[0], exp: time.Now().Add(time.Duration(ms) * time.Millisecond)}
	}
	return int64(1), nil
}

// heldBy says whether v, a lock key's value, is the holder's secret, as the
// scripts do: the readers' marker is nobody's secret.
func heldBy(v, secret string) bool { return v == secret && v != "dlm:readers" }

// ttlArg reads a TTL argument in milliseconds.
func ttlArg(s string) time.Duration {
	ms, _ := strconv.Atoi(s)
	return time.Duration(ms) * time.Millisecond
}

// lease runs op, one of the read lock's and the semaphore's scripts (see
// leaseOp): KEYS are the lock key and the readers' set (and the writer's
// intent, to acquire) for a read lock, the set of permits for a semaphore.
// n.mu is held.
func (n *memNode) lease(op string, read bool, keys, args []string) (any, error) {
	const mark = "dlm:readers"
	k, set := "", keys[0]
	if read {
		k, set = keys[0], keys[1]
	}
	if n.sets == nil {
		n.sets = map[string]map[string]time.Time{}
	}
	now := time.Now()
	leases := n.sets[set]
	if leases == nil {
		leases = map[string]time.Time{}
		n.sets[set] = leases
	}
	for tok, end := range leases {
		if !now.Before(end) {
			delete(leases, tok)
		}
	}
	span := func() {
		var top time.Time
		for _, end := range leases {
			if end.After(top) {
				top = end
			}
		}
		if read {
			if len(leases) == 0 {
				delete(n.keys, k)
			} else {
				n.keys[k] = memEntry{val: mark, exp: top}
			}
		}
	}
	token := args[0]
	_, in := leases[token]
	v, held := "", false
	if read {
		v, held = n.get(k)
	}
	switch op {
	case "release":
		delete(leases, token)
		if !read || v == mark {
			span()
		}
		if in {
			return int64(1), nil
		}
		return int64(0), nil
	case "read acquire":
		if held && v != mark {
			return int64(0), nil
		}
		if _, waits := n.get(keys[2]); waits && !in {
			return int64(0), nil
		}
	case "permit acquire":
		limit, _ := strconv.Atoi(args[len(args)-2])
		if !in && len(leases) >= limit {
			return int64(0), nil
		}
	default: // extend
		if !in || (read && v != mark) {
			return int64(0), nil
		}
	}
	leases[token] = now.Add(ttlArg(args[1]))
	span()
	return int64(1), nil
}
