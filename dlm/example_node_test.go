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
	case strings.Contains(src, "'DEL'"): // release
		var deleted int64
		for _, k := range keys {
			if v, ok := n.get(k); ok && v == args[0] {
				delete(n.keys, k)
				deleted++
			}
		}
		return deleted, nil
	case strings.Contains(src, "'PEXPIRE'"): // extend
		for _, k := range keys {
			if v, _ := n.get(k); v != args[0] {
				return int64(0), nil
			}
		}
		return n.setAll(keys, args)
	case strings.Contains(src, "'PX'") && !strings.Contains(src, "nk / 2"): // acquire, not fenced
		for _, k := range keys {
			if v, ok := n.get(k); ok && v != args[0] {
				return int64(0), nil
			}
		}
		return n.setAll(keys, args)
	}
	return nil, errors.New("ERR script not supported by the example node")
}

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
