package memlock

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// The Redis commands the scripts call, on the node's keys: each helper is
// one command as Redis runs it, for the scripts' steps to call in the
// Lua's order. Every helper expects n.mu held.

// get returns the live value of key, dropping it once expired.
func (n *Node) get(key string) (string, bool) {
	e, ok := n.keys[key]
	if ok && !e.exp.IsZero() && !time.Now().Before(e.exp) {
		delete(n.keys, key)
		return "", false
	}
	return e.val, ok
}

// set is SET key val, with PX d when d > 0 and without expiry otherwise.
func (n *Node) set(key, val string, d time.Duration) {
	e := entry{val: val}
	if d > 0 {
		e.exp = time.Now().Add(d)
	}
	n.keys[key] = e
}

// pttl is Redis' PTTL: -2 for a missing key, -1 for one without expiry.
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

// pexpire is PEXPIRE: key's TTL set to d, when key exists; a d of zero or
// less deletes it, as Redis does.
func (n *Node) pexpire(key string, d time.Duration) {
	if _, ok := n.get(key); !ok {
		return
	}
	if d <= 0 {
		delete(n.keys, key)
		return
	}
	e := n.keys[key]
	e.exp = time.Now().Add(d)
	n.keys[key] = e
}

// counter returns the integer at key, 0 when none.
func (n *Node) counter(key string) int64 {
	v, _ := n.get(key)
	c, _ := strconv.ParseInt(v, 10, 64)
	return c
}

// zset returns the live sorted set at key, nil when there is none.
func (n *Node) zset(key string) map[string]int64 {
	if _, ok := n.get(key); !ok {
		return nil
	}
	return n.keys[key].set
}

// zadd is ZADD: member's score in the set at key, created without expiry
// when missing; an existing set keeps its TTL.
func (n *Node) zadd(key, member string, score int64) {
	s := n.zset(key)
	if s == nil {
		s = map[string]int64{}
		n.keys[key] = entry{set: s}
	}
	s[member] = score
}

// zrem is ZREM of one member: 1 when it was in the set at key, which is
// deleted once empty.
func (n *Node) zrem(key, member string) int64 {
	s := n.zset(key)
	if _, ok := s[member]; !ok {
		return 0
	}
	delete(s, member)
	if len(s) == 0 {
		delete(n.keys, key)
	}
	return 1
}

// zfirst is ZRANGE key 0 0: the member of the lowest score, the first in
// byte order among equal scores, and false when the set is empty.
func (n *Node) zfirst(key string) (string, bool) {
	var first string
	var low int64
	found := false
	for m, score := range n.zset(key) {
		if !found || score < low || score == low && m < first {
			first, low, found = m, score, true
		}
	}
	return first, found
}

// nowMillis is the node's clock in ms, as the scripts read it from TIME.
func nowMillis() int64 { return time.Now().UnixMilli() }

// number reads an integer argument, as the scripts' tonumber does.
func number(arg string) (int64, error) {
	v, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return 0, errors.New("ERR memlock: argument " + strconv.Quote(arg) + " is not an integer")
	}
	return v, nil
}

// millis reads a PX argument.
func millis(arg string) (time.Duration, error) {
	ms, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || ms <= 0 {
		return 0, errInvalidExpire
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// errInvalidExpire is Redis' reply to a SET whose PX is not a positive
// integer.
var errInvalidExpire = errors.New("ERR invalid expire time in 'set' command")

// errNotInteger is Redis' reply to an argument that should be an integer.
var errNotInteger = errors.New("ERR value is not an integer or out of range")

// luaNumber is a value the Lua read with tonumber: a number, or nil (ok
// false), which fails the first comparison or sum that uses it.
type luaNumber struct {
	v  float64
	ok bool
}

// tonumber is Lua's tonumber of a string: a decimal (or hexadecimal) number
// with spaces around it; a number too large for a float64 is an infinity,
// as strtod makes it.
func tonumber(s string) luaNumber {
	t := strings.TrimSpace(s)
	if t == "" {
		return luaNumber{}
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return luaNumber{f, true}
	}
	if h, ok := strings.CutPrefix(strings.ToLower(t), "0x"); ok {
		if u, err := strconv.ParseUint(h, 16, 64); err == nil {
			return luaNumber{float64(u), true}
		}
	}
	return luaNumber{}
}

// num returns x, or the error of Lua's arithmetic on nil, naming what the
// script read.
func (x luaNumber) num(what string) (float64, error) {
	if !x.ok {
		return 0, errors.New("ERR memlock: " + what + " is not a number (the script compares nil)")
	}
	return x.v, nil
}

// whole returns f as an integer, for a score or TTL the node keeps as one;
// a Lua number with a fraction, which Redis would keep as a double and
// package dlm never sends, is an error reply.
func whole(f float64, what string) (int64, error) {
	if f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, errors.New("ERR memlock: " + what + " " + strconv.FormatFloat(f, 'g', -1, 64) + " is not an integer")
	}
	return int64(f), nil
}

// reply is a Lua number returned by a script: Redis replies with the
// integer it truncates to.
func reply(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= 1<<63:
		return math.MaxInt64
	case f < -(1 << 63):
		return math.MinInt64
	}
	return int64(f)
}

// errNilArgument is Redis' reply to a script that passes nil to a command.
var errNilArgument = errors.New("ERR Lua redis lib command arguments must be strings or integers")
