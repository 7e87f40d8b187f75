package memlock

import (
	"fmt"
	"strconv"
	"time"
)

// The fencing counters of the fenced scripts (package script's mutex.go):
// KEYS[n+1..2n] beside the lock keys KEYS[1..n].

// bumpFences is the fenced acquire script's counting: it sets every
// counter to one more than the largest of them and returns that value. With
// expiry, the scripts' ARGV[3], not "0", a missing counter counts as the
// node's clock in microseconds instead of 0 and every counter expires after
// expiry ms. n.mu is held.
func (n *Node) bumpFences(counters []string, expiry string) (int64, error) {
	fx, err := strconv.ParseInt(expiry, 10, 64)
	if err != nil {
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
