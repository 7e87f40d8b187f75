package memlock

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// The mutex's scripts (package script's mutex.go), step for step.

// owns is the scripts' owns: whether v, a lock key's value, is the holder's
// secret. A reserved value (anything beginning with
// [script.ReservedPrefix]: the readers' mark, a key handed to a waiter) is
// nobody's secret, even when secret equals it, as in dlm's Lua.
func owns(v, secret string) bool {
	return v == secret && !strings.HasPrefix(v, script.ReservedPrefix)
}

// errTooFewArgs is the reply to a script run with fewer arguments than its
// Lua reads: the Lua would fail on the nil, or read another argument.
var errTooFewArgs = errors.New("ERR memlock: too few arguments for the script")

// acquire is the mutex's acquire script, plain or fenced (behind
// [Node.guarded] when guarded, which takes the guard key off keys). KEYS
// are the lock keys, their counters when fenced, then their lines; ARGV the
// secret, the TTL, the counters' expiry when fenced, the guard's window when
// guarded, the waiter's id, the life of its place, its ticket, the bound of
// a line, "1" for fairness, and announce's flag.
//
// A key may be taken when it is free, holds the secret, or is reserved for
// the waiter; with fairness a free key only by the head of its line or
// while the line is empty. A grant sets every key (and counter), writes no
// line and announces nothing; a refusal gives the waiter a place in every
// line.
// Reply: {the grant (1 or the counter) or 0, the ticket}, and a refusal's
// third element, the PTTL of the key that refused (0 when free), and for a
// waiter with an id a fourth, 1 when anyone listens on the key's broadcast
// channel. n.mu is held.
func (n *Node) acquire(keys, args []string, fenced bool) (any, error) {
	per, lines := 3, 1
	if fenced {
		per, lines = 4, 2
	}
	cnt, err := lockCount(keys, per)
	if err != nil {
		return nil, err
	}
	if len(args) < 8 {
		return nil, errTooFewArgs
	}
	a, now := n.announcerOf(args), nowMillis()
	lk := cnt * lines
	wa := len(args) - 6
	me, life, ticket, bound := args[wa], tonumber(args[wa+1]), tonumber(args[wa+2]), tonumber(args[wa+3])
	fair := args[wa+4] == "1"
	mark := script.ReservedFor(me)
	mayTake := func(i int, v string, ok bool) bool {
		switch {
		case me != "" && ok && v == mark:
			return true
		case ok && !owns(v, args[0]):
			return false
		case ok || !fair:
			return true
		}
		l := lineAt(keys, lk, i)
		if len(n.zset(l.waiters)) == 0 {
			return true // ZCARD
		}
		h, found := n.headOf(l, now)
		return !found || h == me
	}
	for i, k := range keys[:cnt] {
		v, ok := n.get(k)
		if mayTake(i, v, ok) {
			continue
		}
		var left int64
		if ok {
			if err := a.readersHold(k, v, args[1]); err != nil {
				return nil, err
			}
			left = max(n.pttl(k), 0)
		}
		if me == "" {
			return []any{int64(0), int64(0), left}, nil
		}
		var open int64
		if a.listeners(script.WakeChannel(k)) > 0 {
			open = 1
			if err := a.heard(k, left, args[1]); err != nil {
				return nil, err
			}
		}
		keep, err := luaMax(life, tonumber(args[1]))
		if err != nil {
			return nil, err
		}
		var t float64
		for j := range cnt {
			p, err := n.place(lineAt(keys, lk, j), me, life, ticket, bound, keep, now)
			if err != nil {
				return nil, err
			}
			if p < 0 {
				return []any{int64(0), int64(-1), left, open}, nil
			}
			t = max(t, p)
		}
		return []any{int64(0), reply(t), left, open}, nil
	}
	ttl, err := millis(args[1])
	if err != nil {
		return nil, err
	}
	var r int64 = 1
	if fenced {
		if r, err = n.bumpFences(keys[cnt:2*cnt], args[2]); err != nil {
			return nil, err
		}
	}
	for _, k := range keys[:cnt] {
		n.set(k, args[0], ttl)
	}
	return []any{r, int64(0)}, nil
}

// luaMax is math.max of two numbers read with tonumber, which fails on nil.
func luaMax(x, y luaNumber) (luaNumber, error) {
	if !x.ok || !y.ok {
		return luaNumber{}, errors.New("ERR memlock: bad argument to 'max' (number expected, got nil)")
	}
	return luaNumber{max(x.v, y.v), true}, nil
}

// release is the Release script: KEYS the lock keys then their lines; ARGV
// the secret, the waiter's id, its ticket, the life of its place, how long
// a key handed on stays reserved (ms), how ([script.ReleaseLock],
// [script.ReleaseAttempt], [script.ReleaseKeepTurn]) and announce's flag.
//
// The lock's release frees each key that holds the secret, is reserved
// for the waiter, or is free already, hands it on to the head of its line,
// and broadcasts a key it freed and handed to nobody; it deletes the
// writer's intent with
// each key it deletes, and takes the waiter out of every line. A failed
// attempt's release frees the keys that hold the secret, or reserves them
// for the waiter again (ReleaseKeepTurn), keeps a waiting writer's intent,
// announces nothing, and gives the waiter its place back under its ticket,
// within the line's bound (args[6] when there are eight) unless it keeps
// its turn. Reply: the number of keys that held the secret. n.mu is held.
func (n *Node) release(keys, args []string) (any, error) {
	cnt, err := lockCount(keys, 3)
	if err != nil {
		return nil, err
	}
	if len(args) < 7 {
		return nil, errTooFewArgs
	}
	if deleted, ok := n.releaseQuick(keys[:cnt], keys[cnt:], args); ok {
		return deleted, nil
	}
	a, now := n.announcerOf(args), nowMillis()
	me, ticket, life, ms, how := args[1], tonumber(args[2]), tonumber(args[3]), tonumber(args[4]), args[5]
	bound := luaNumber{-1, true}
	if len(args) >= 8 && how != script.ReleaseKeepTurn {
		bound = tonumber(args[6])
	}
	mark := script.ReservedFor(me)
	var deleted int64
	for i, k := range keys[:cnt] {
		l := lineAt(keys, cnt, i)
		v, ok := n.get(k)
		mine := ok && owns(v, args[0])
		if mine {
			deleted++
		}
		if how == script.ReleaseLock {
			if me != "" {
				n.leave(l, me)
			}
			if !mine && ok && (me == "" || v != mark) {
				continue // another's key
			}
			if ok {
				delete(n.keys, k)
				a.clearIntent(k)
			}
			handed, err := n.handOn(k, l, ms, a, now)
			if err != nil {
				return nil, err
			}
			if !handed && ok {
				a.released(k)
			}
			continue
		}
		if mine {
			if how == script.ReleaseKeepTurn && me != "" {
				if err := n.reserve(k, me, ms); err != nil {
					return nil, err
				}
			} else {
				delete(n.keys, k)
				if !a.flag.WriterWaits {
					a.clearIntent(k)
				}
			}
		}
		if me != "" {
			if _, err := n.place(l, me, life, ticket, bound, life, now); err != nil {
				return nil, err
			}
		}
	}
	return deleted, nil
}

// releaseQuick is the Release script's quick path, for the lock keys
// rkeys, their lines and the script's ARGV: when the lock's release, or a
// failed attempt's of a caller without an id, finds nothing beside any key
// to serve (no line, intent, mark of listeners, leader key or line of the
// previous release, nobody on the broadcast channel), each key that holds the secret, or is reserved for
// the releasing waiter by the lock's release, is deleted, and nothing else
// is done. It returns the number of keys that held the secret, and whether
// it ran. n.mu is held.
func (n *Node) releaseQuick(rkeys, lines, args []string) (int64, bool) {
	me, how := args[1], args[5]
	if how != script.ReleaseLock && me != "" {
		return 0, false
	}
	a := n.announcerOf(args)
	for i, k := range rkeys {
		for _, x := range []string{lines[2*i], script.IntentKey(k), script.ListenKey(k), script.LeaderKey(k), k + script.PreviousLineSuffix} {
			if _, ok := n.get(x); ok {
				return 0, false
			}
		}
		if a.listeners(script.WakeChannel(k)) > 0 {
			return 0, false
		}
	}
	var deleted int64
	for _, k := range rkeys {
		v, ok := n.get(k)
		switch {
		case ok && owns(v, args[0]):
			deleted++
			delete(n.keys, k)
		case ok && me != "" && how == script.ReleaseLock && v == script.ReservedFor(me):
			delete(n.keys, k)
		}
	}
	return deleted, true
}

// extend is the Extend script: every key's TTL set to ARGV[2] if all hold
// the secret ARGV[1]. n.mu is held.
func (n *Node) extend(keys, args []string) (any, error) {
	if len(args) < 2 {
		return nil, errTooFewArgs
	}
	for _, k := range keys {
		if v, ok := n.get(k); !ok || !owns(v, args[0]) {
			return int64(0), nil
		}
	}
	ms, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		return nil, errNotInteger
	}
	for _, k := range keys {
		n.pexpire(k, time.Duration(ms)*time.Millisecond)
	}
	return int64(1), nil
}
