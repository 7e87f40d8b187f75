package memlock

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// Node is an in-memory Redis master for package dlm: a [driver.Node] and a
// [driver.Subscriber] that runs dlm's scripts in Go, each as one atomic
// step, with keys that expire by the local clock (the fake clock inside a
// testing/synctest bubble). It refuses any other script with an error
// reply, as a node missing a command would. A Node is safe for concurrent
// use; the zero value is not, use [NewNode].
type Node struct {
	addr string
	id   string // what the node says it is, as a server's run_id

	mu   sync.Mutex
	keys map[string]entry
	subs map[*subscription]struct{}
	down bool
}

// entry is a key's value: a string, or a sorted set when set is not nil.
type entry struct {
	val string
	set map[string]int64 // a sorted set's members and their scores
	exp time.Time        // zero: no expiry
}

var (
	_ driver.Node       = (*Node)(nil)
	_ driver.Subscriber = (*Node)(nil)
)

// NewNode returns an empty in-memory node named addr in errors and logs.
// It answers package dlm's question of which server it is (a Redis
// server's run_id) with an id of its own, 40 random hexadecimal digits, the
// same for the node's whole life: the one node passed twice under two
// names is recognised as one server.
func NewNode(addr string) *Node {
	var id [20]byte
	rand.Read(id[:])
	return &Node{addr: addr, id: hex.EncodeToString(id[:]), keys: map[string]entry{}, subs: map[*subscription]struct{}{}}
}

// Addr returns the node's name.
func (n *Node) Addr() string { return n.addr }

// Close does nothing: the node keeps its keys, and its subscriptions end
// with their own Close.
func (n *Node) Close() error { return nil }

// SetDown makes the node unreachable, or reachable again: while it is down,
// Eval and Subscribe fail as a refused connection would, the subscriptions
// open end as a lost connection would end them, and the node keeps its keys.
// It lets tests drive [github.com/dlmgo/redlock/dlm.ErrUnavailable] and the
// survival of a minority of failed nodes.
func (n *Node) SetDown(down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = down
	if down {
		for s := range n.subs {
			delete(n.subs, s)
			s.end()
		}
	}
}

// FlushAll deletes every key, as a Redis restarted without persistence
// would have lost them.
func (n *Node) FlushAll() {
	n.mu.Lock()
	clear(n.keys)
	n.mu.Unlock()
}

// errDown is the failure of a node that is down.
var errDown = errors.New("memlock: connection refused (node is down)")

// Eval runs one of package dlm's scripts, recognised by identity with
// the values of dlm's one definition of them (package script).
func (n *Node) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	switch s {
	case script.Acquire:
		return n.acquire(keys, args, false)
	case script.GuardedAcquire:
		return n.guarded(keys, args[2], func(keys []string) (any, error) { return n.acquire(keys, args, false) })
	case script.FencedAcquire:
		return n.acquire(keys, args, true)
	case script.GuardedFencedAcquire:
		return n.guarded(keys, args[3], func(keys []string) (any, error) { return n.acquire(keys, args, true) })
	case script.Release:
		loud, waits := announceFlag(args)
		var deleted int64
		for _, k := range keys {
			if v, ok := n.get(k); ok && owns(v, args[0]) {
				delete(n.keys, k)
				if !waits { // a waiting writer's failed attempt keeps its intent
					delete(n.keys, script.IntentKey(k))
				}
				deleted++
				n.announceRelease(k, loud)
			}
		}
		return deleted, nil
	case script.ReadAcquire:
		return n.readAcquire(keys, args)
	case script.GuardedReadAcquire:
		return n.guarded(keys, args[2], func(keys []string) (any, error) { return n.readAcquire(keys, args) })
	case script.ReadExtend:
		return n.readExtend(keys, args)
	case script.ReadRelease:
		return n.readRelease(keys, args)
	case script.PermitAcquire:
		return n.permitAcquire(keys, args)
	case script.GuardedPermitAcquire:
		return n.guarded(keys, args[2], func(keys []string) (any, error) { return n.permitAcquire(keys, args) })
	case script.PermitExtend:
		return n.permitExtend(keys, args)
	case script.PermitRelease:
		return n.permitRelease(keys, args)
	case script.Extend:
		return n.extendLock(keys, args[0], args[1])
	case script.ExtendBatch:
		return n.extendBatch(keys, args)
	case script.RaiseFence:
		locks, counters := keys[:len(keys)/2], keys[len(keys)/2:]
		for _, k := range locks {
			if v, _ := n.get(k); !owns(v, args[0]) {
				return int64(0), nil
			}
		}
		f, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return nil, errNotInteger
		}
		return n.raiseFences(counters, f, args[1])
	case script.ReadFence:
		return n.readFence(keys, args[0]), nil
	case script.Status:
		return []any{n.pttl(keys[0]), n.counter(keys[1])}, nil
	case script.ServerID:
		return n.id, nil
	case script.ServerProbe:
		ttl, err := millis(args[1])
		if err != nil {
			return nil, err
		}
		old, ok := n.get(keys[0])
		n.keys[keys[0]] = entry{val: args[0], exp: time.Now().Add(ttl)}
		if !ok {
			return nil, nil
		}
		return old, nil
	case script.Leader:
		limit, err := strconv.Atoi(args[0])
		if err != nil {
			return nil, errNotInteger
		}
		v, ok := n.get(keys[0])
		if !ok {
			return []any{}, nil
		}
		if len(v) > limit {
			// Measured, never read: see script.Leader.
			return []any{int64(len(v))}, nil
		}
		sum := sha1.Sum([]byte(v))
		value := ""
		if i := strings.IndexByte(v, ':'); i >= 0 {
			value = v[i+1:]
		}
		return []any{hex.EncodeToString(sum[:]), value, n.pttl(keys[0])}, nil
	default:
		return nil, fmt.Errorf("ERR memlock: script %s is not one the in-memory node runs (fairness is not supported)", s.Hash)
	}
}

// acquire is the acquire script, plain or fenced: the lock keys (followed
// by as many fencing counters when fenced) all set to the secret with the
// TTL unless another secret holds one. Refused by readers, a waiting writer
// records its intent, which a grant deletes. n.mu is held.
func (n *Node) acquire(keys, args []string, fenced bool) (any, error) {
	ttl, err := millis(args[1])
	if err != nil {
		return nil, err
	}
	loud, waiting := announceFlag(args)
	locks := keys
	if fenced {
		locks = keys[:len(keys)/2]
	}
	for _, k := range locks {
		if v, ok := n.get(k); ok && !owns(v, args[0]) {
			if v == script.ReadersMark && waiting {
				n.keys[script.IntentKey(k)] = entry{val: "1", exp: time.Now().Add(ttl)}
			}
			return int64(0), nil
		}
	}
	var f int64 = 1
	if fenced {
		if f, err = n.bumpFences(keys[len(locks):], args[2]); err != nil {
			return nil, err
		}
	}
	for _, k := range locks {
		n.keys[k] = entry{val: args[0], exp: time.Now().Add(ttl)}
		if loud {
			n.publish(script.WakeChannel(k), script.WakeGrant)
		}
	}
	return f, nil
}

// bumpFences is the fenced acquire script's counting: it sets every
// counter to one more than the largest of them and returns that value. With
// expiry, the scripts' ARGV[3], not "0", a missing counter counts as the
// node's clock in microseconds instead of 0 and every counter expires after
// expiry ms. n.mu is held.
func (n *Node) bumpFences(counters []string, expiry string) (int64, error) {
	fx, err := strconv.ParseInt(expiry, 10, 64)
	if err != nil || fx < 0 {
		return 0, errNotInteger
	}
	var top int64
	for _, k := range counters {
		c, ok, err := n.fence(k)
		switch {
		case err != nil:
			return 0, err
		case !ok && fx > 0:
			c = time.Now().UnixMicro()
		}
		top = max(top, c)
	}
	f := top + 1
	var exp time.Time
	if fx > 0 {
		exp = time.Now().Add(time.Duration(fx) * time.Millisecond)
	}
	for _, k := range counters {
		n.keys[k] = entry{val: strconv.FormatInt(f, 10), exp: exp}
	}
	return f, nil
}

// raiseFences is the raise script's writes, once the lock keys are known to
// hold the secret: every counter below f is set to f (val, its text),
// keeping its TTL when it has one of at least a millisecond and without
// expiry otherwise, as the Lua's SET ... PX of its PTTL does. n.mu is held.
func (n *Node) raiseFences(counters []string, f int64, val string) (any, error) {
	for _, k := range counters {
		c, _, err := n.fence(k)
		if err != nil {
			return nil, err
		}
		if c >= f {
			continue
		}
		e := entry{val: val}
		if n.pttl(k) > 0 {
			e.exp = n.keys[k].exp
		}
		n.keys[k] = e
	}
	return int64(1), nil
}

// readFence is the read-fence script: the counters as the node holds them
// ("0" for a missing one) if every lock key holds secret, none otherwise.
// n.mu is held.
func (n *Node) readFence(keys []string, secret string) []any {
	locks, counters := keys[:len(keys)/2], keys[len(keys)/2:]
	for _, k := range locks {
		if v, _ := n.get(k); !owns(v, secret) {
			return []any{}
		}
	}
	out := make([]any, 0, len(counters))
	for _, k := range counters {
		v, ok := n.get(k)
		if !ok {
			v = "0"
		}
		out = append(out, v)
	}
	return out
}

// fence reads the fencing counter at key: its value and whether it exists
// (0 and false when not), or an error when it holds no integer, as the
// scripts' comparison of a nil tonumber would fail. n.mu is held.
func (n *Node) fence(key string) (int64, bool, error) {
	v, ok := n.get(key)
	if !ok {
		return 0, false, nil
	}
	c, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("ERR memlock: fencing counter %s holds no integer", key)
	}
	return c, true, nil
}

// errNotInteger is Redis' reply to an argument that should be an integer.
var errNotInteger = errors.New("ERR value is not an integer or out of range")

// owns is the scripts' owns: whether v, a lock key's value, is the holder's
// secret. The readers' marker is nobody's secret, even when secret equals
// it, as in dlm's Lua.
func owns(v, secret string) bool {
	return v == secret && v != script.ReadersMark
}

// announceFlag reads the flag of the scripts that announce, their last
// argument ([script.Flag]), as their Lua does: Loud or Sharded asks for
// announcements (the latter on a cluster's shard channel, which is the same
// channel on one node), and WriterWaits marks the attempt of a writer that
// will try again.
func announceFlag(args []string) (loud, waiting bool) {
	if len(args) == 0 {
		return false, false
	}
	f := script.ParseFlag(args[len(args)-1])
	return f.Mode != script.Quiet, f.WriterWaits
}

// announceRelease announces the release of key when loud and anyone
// listens on its wake channel: [script.WakeRelease] and the number of
// listeners. n.mu is
// held.
func (n *Node) announceRelease(key string, loud bool) {
	if !loud {
		return
	}
	if subs := n.listeners(script.WakeChannel(key)); subs > 0 {
		n.publish(script.WakeChannel(key), script.WakeRelease+strconv.Itoa(subs))
	}
}

// get returns the live value of key, dropping it once expired. n.mu is
// held.
func (n *Node) get(key string) (string, bool) {
	e, ok := n.keys[key]
	if ok && !e.exp.IsZero() && !time.Now().Before(e.exp) {
		delete(n.keys, key)
		return "", false
	}
	return e.val, ok
}

// pttl is Redis' PTTL: -2 for a missing key, -1 for one without expiry.
// n.mu is held.
func (n *Node) pttl(key string) int64 {
	if _, ok := n.get(key); !ok {
		return -2
	}
	e := n.keys[key]
	if e.exp.IsZero() {
		return -1
	}
	return max(time.Until(e.exp).Milliseconds(), 0)
}

// counter returns the integer at key, 0 when none. n.mu is held.
func (n *Node) counter(key string) int64 {
	v, _ := n.get(key)
	c, _ := strconv.ParseInt(v, 10, 64)
	return c
}

// millis reads a PX argument.
func millis(arg string) (time.Duration, error) {
	ms, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || ms <= 0 {
		return 0, errors.New("ERR invalid expire time in 'set' command")
	}
	return time.Duration(ms) * time.Millisecond, nil
}
