package memlock

import (
	"context"
	"crypto/rand"
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
		return n.guarded(keys, args, 2, func(keys []string) (any, error) { return n.acquire(keys, args, false) })
	case script.FencedAcquire:
		return n.acquire(keys, args, true)
	case script.GuardedFencedAcquire:
		return n.guarded(keys, args, 3, func(keys []string) (any, error) { return n.acquire(keys, args, true) })
	case script.Release:
		return n.release(keys, args)
	case script.Leave:
		return n.leaveLines(keys, args)
	case script.Extend:
		return n.extend(keys, args)
	case script.ReadAcquire:
		return n.readAcquire(keys, args)
	case script.GuardedReadAcquire:
		return n.guarded(keys, args, 2, func(keys []string) (any, error) { return n.readAcquire(keys, args) })
	case script.ReadExtend:
		return n.readExtend(keys, args)
	case script.ReadRelease:
		return n.readRelease(keys, args)
	case script.PermitAcquire:
		return n.permitAcquire(keys, args)
	case script.GuardedPermitAcquire:
		return n.guarded(keys, args, 2, func(keys []string) (any, error) { return n.permitAcquire(keys, args) })
	case script.PermitExtend:
		return n.permitExtend(keys, args)
	case script.PermitRelease:
		return n.permitRelease(keys, args)
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
		v, _ := n.get(keys[0])
		var reserved int64
		if strings.HasPrefix(v, script.ReservedFor("")) {
			reserved = 1
		}
		return []any{n.pttl(keys[0]), n.counter(keys[1]), reserved}, nil
	case script.ServerID:
		return n.id, nil
	case script.ServerProbe:
		ttl, err := millis(args[1])
		if err != nil {
			return nil, err
		}
		old, ok := n.get(keys[0])
		n.set(keys[0], args[0], ttl)
		if !ok {
			return nil, nil
		}
		return old, nil
	case script.Leader:
		return n.leader(keys, args)
	case script.SetLeader:
		return n.setLeader(keys, args)
	case script.StatusOwner:
		return n.statusOwner(keys)
	case script.SetOwner:
		return n.setOwner(keys, args)
	case script.TouchOwner:
		return n.touchOwner(keys, args)
	case script.ForceRelease:
		return n.forceRelease(keys)
	default:
		return nil, fmt.Errorf("ERR memlock: script %s is not one the in-memory node runs", s.Hash)
	}
}
