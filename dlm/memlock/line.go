package memlock

import (
	"errors"
	"strconv"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// The line of waiters of a lock key (package script's line.go), step for
// step: the waiters by ticket and the ends of their places (ms, by the
// node's clock), with the functions the scripts define on them. Tickets
// are Lua numbers, float64 here as there, so that a ticket the node cannot
// hold exactly is rounded as the Lua rounds it.

// line is the keys of one lock key's line ([script.LineKeys]).
type line struct{ waiters, ends string }

// lineAt is the line of the lock key i (from 0) of a script whose lines
// start at keys[lk], as the Lua's lineOf(i + 1).
func lineAt(keys []string, lk, i int) line {
	b := lk + 2*i
	return line{keys[b], keys[b+1]}
}

// lockCount is the number of lock keys of a script whose KEYS are, for each
// lock key, per keys in all; a count the Lua would read as a fraction is an
// error reply.
func lockCount(keys []string, per int) (int, error) {
	if len(keys)%per != 0 {
		return 0, errors.New("ERR memlock: " + strconv.Itoa(len(keys)) + " keys are not " + strconv.Itoa(per) + " for each lock key")
	}
	return len(keys) / per, nil
}

// fenceLimit is [script.FenceLimit] as the Lua compares with it.
const fenceLimit = float64(script.FenceLimit)

// dropLeft is the line's dropLeft: the places that ended by now removed
// from both sets.
func (n *Node) dropLeft(l line, now int64) {
	var gone []string
	for m, end := range n.zset(l.ends) {
		if end <= now {
			gone = append(gone, m)
		}
	}
	for _, m := range gone {
		n.zrem(l.waiters, m)
		n.zrem(l.ends, m)
	}
}

// place is the line's place(i, id, life, ticket, bound, keep): it gives
// waiter id a place, or renews it, for life ms under ticket — the node's
// clock in microseconds when ticket is no number from 1 to below
// [script.FenceLimit]. The line's keys live keep ms more. It returns the
// ticket, or -1 when the line holds bound waiters already, once the places
// that ended are dropped (bound below 0: none).
// The Lua's errors on a nil argument come where the Lua meets them.
func (n *Node) place(l line, id string, life, ticket, bound, keep luaNumber, now int64) (float64, error) {
	t := ticket.v
	if !ticket.ok || !(t >= 1 && t < fenceLimit) {
		t = float64(now) * 1000
	}
	b, err := bound.num("the bound of a line")
	if err != nil {
		return 0, err
	}
	if _, placed := n.zset(l.waiters)[id]; b >= 0 && !placed && float64(len(n.zset(l.waiters))) >= b {
		n.dropLeft(l, now)
		if float64(len(n.zset(l.waiters))) >= b {
			return -1, nil
		}
	}
	score, err := whole(t, "a ticket")
	if err != nil {
		return 0, err
	}
	n.zadd(l.waiters, id, score)
	lf, err := life.num("the life of a place")
	if err != nil {
		return 0, err
	}
	end, err := whole(float64(now)+lf, "the end of a place")
	if err != nil {
		return 0, err
	}
	n.zadd(l.ends, id, end)
	kp, err := keep.num("how long the line's keys live")
	if err != nil {
		return 0, err
	}
	ms, err := whole(kp, "PEXPIRE")
	if err != nil {
		return 0, errNotInteger
	}
	for _, k := range []string{l.waiters, l.ends} {
		n.pexpire(k, time.Duration(ms)*time.Millisecond)
	}
	return t, nil
}

// leave is the line's leave(i, id): id out of the line, and a line left
// empty deleted.
func (n *Node) leave(l line, id string) {
	if n.zrem(l.waiters, id) == 0 {
		return
	}
	n.zrem(l.ends, id)
	if len(n.zset(l.waiters)) == 0 {
		delete(n.keys, l.ends)
	}
}

// headOf is the line's headOf(i): the waiter of the lowest ticket once the
// places that ended are dropped, and those at the head without an end of
// their place; false for an empty line.
func (n *Node) headOf(l line, now int64) (string, bool) {
	n.dropLeft(l, now)
	for {
		h, ok := n.zfirst(l.waiters)
		if !ok {
			return "", false
		}
		if _, placed := n.zset(l.ends)[h]; placed {
			return h, true
		}
		n.zrem(l.waiters, h)
	}
}

// handOn is the line's handOn(i, ms): free lock key key handed on to the
// head of its line l, the head out of the line and woken, and the key
// reserved for it for ms unless anyone listens on its broadcast channel.
// It returns whether it reserved the key; false, doing nothing, when the
// line is empty or the flag is Quiet.
func (n *Node) handOn(key string, l line, ms luaNumber, a announcer, now int64) (bool, error) {
	if !a.loud() {
		return false, nil
	}
	h, ok := n.headOf(l, now)
	if !ok {
		return false, nil
	}
	n.leave(l, h)
	a.wake(key, h)
	if a.listeners(script.WakeChannel(key)) > 0 {
		return false, nil
	}
	if err := n.reserve(key, h, ms); err != nil {
		return false, err
	}
	return true, nil
}

// leaveLines is the Leave script: KEYS the lock keys then their lines;
// ARGV the waiter's id, how long a key handed on stays reserved (ms) and
// announce's flag. The waiter leaves every line, and each key reserved for
// it is handed on to the next in line, or freed and broadcast.
func (n *Node) leaveLines(keys, args []string) (any, error) {
	lk, err := lockCount(keys, 3)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, errNilArgument
	}
	a, now := n.announcerOf(args), nowMillis()
	me, ms := args[0], argNumber(args, 1)
	for i, k := range keys[:lk] {
		l := lineAt(keys, lk, i)
		n.leave(l, me)
		if v, ok := n.get(k); ok && v == script.ReservedFor(me) {
			delete(n.keys, k)
			handed, err := n.handOn(k, l, ms, a, now)
			if err != nil {
				return nil, err
			}
			if !handed {
				a.released(k)
			}
		}
	}
	return int64(1), nil
}

// argNumber is tonumber(ARGV[i + 1]): nil past the last argument.
func argNumber(args []string, i int) luaNumber {
	if i >= len(args) {
		return luaNumber{}
	}
	return tonumber(args[i])
}
