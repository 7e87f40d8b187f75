package memlock

import (
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// The read lock's and the semaphore's scripts (package script's rw.go and
// semaphore.go), step for step: each lease is a member of a sorted
// set scored by the end of its lease in ms by the node's clock, and the set,
// with the read lock's key, lives as long as its longest lease.

// readAcquire is the read lock's acquire script (behind [Node.guarded]
// when guarded): KEYS are the lock key, the readers' set and the
// writer's intent; ARGV the secret and the TTL. The reader is let in unless
// a writer holds the key, or waits for it and the reader is not in yet;
// then the reader is marked listening ([script.ListenKey]). n.mu is held.
func (n *Node) readAcquire(keys, args []string) (any, error) {
	ttl, err := number(args[1])
	if err != nil {
		return nil, err
	}
	now, a := nowMillis(), n.announcerOf(args)
	if v, ok := n.get(keys[0]); ok && v != script.ReadersMark {
		if err := a.heard(keys[0], max(n.pttl(keys[0]), 0), args[1]); err != nil {
			return nil, err
		}
		return int64(0), nil
	}
	if _, ok := n.get(keys[2]); ok {
		if _, in := n.zset(keys[1])[args[0]]; !in {
			if err := a.heard(keys[0], max(n.pttl(keys[2]), 0), args[1]); err != nil {
				return nil, err
			}
			return int64(0), nil
		}
	}
	n.zadd(keys[1], args[0], now+ttl)
	n.keys[keys[0]] = entry{val: script.ReadersMark}
	n.spanLeases(keys[1], keys[:1], now)
	return int64(1), nil
}

// readExtend is the read lock's extend script: KEYS are the lock key and
// the readers' set, ARGV the secret and the TTL. n.mu is held.
func (n *Node) readExtend(keys, args []string) (any, error) {
	ttl, err := number(args[1])
	if err != nil {
		return nil, err
	}
	if v, _ := n.get(keys[0]); v != script.ReadersMark {
		return int64(0), nil
	}
	return n.renew(keys[1], keys[:1], args[0], nowMillis(), ttl), nil
}

// readRelease is the read lock's release script: KEYS are the lock key,
// the readers' set and the lock key's line; ARGV the secret, how long a key
// handed on stays reserved (ms) and announce's flag. The last reader out
// deletes the key and hands it on to the head of its line, a writer, or,
// with nobody in line, broadcasts the release. n.mu is held.
func (n *Node) readRelease(keys, args []string) (any, error) {
	if len(keys) < 4 || len(args) == 0 {
		return nil, errTooFewArgs
	}
	a, now := n.announcerOf(args), nowMillis()
	removed := n.zrem(keys[1], args[0])
	if v, _ := n.get(keys[0]); v != script.ReadersMark {
		return removed, nil
	}
	if n.spanLeases(keys[1], keys[:1], now) {
		handed, err := n.handOn(keys[0], lineAt(keys, 2, 0), argNumber(args, 1), a, now)
		if err != nil {
			return nil, err
		}
		if !handed {
			a.released(keys[0])
		}
	}
	return removed, nil
}

// permitAcquire is the semaphore's acquire script (behind [Node.guarded]
// when guarded): KEYS[0] is the set of permits; ARGV the secret,
// the TTL, the limit and announce's flag last. The permit is granted when
// it is held already or fewer than the limit are. n.mu is held.
func (n *Node) permitAcquire(keys, args []string) (any, error) {
	ttl, err := number(args[1])
	if err != nil {
		return nil, err
	}
	limit, err := number(args[len(args)-2])
	if err != nil {
		return nil, err
	}
	now := nowMillis()
	n.dropEnded(keys[0], now)
	s := n.zset(keys[0])
	if _, in := s[args[0]]; !in && int64(len(s)) >= limit {
		return int64(0), nil
	}
	n.zadd(keys[0], args[0], now+ttl)
	n.spanLeases(keys[0], nil, now)
	return int64(1), nil
}

// permitExtend is the semaphore's extend script: KEYS[0] is the set of
// permits, ARGV the secret and the TTL. n.mu is held.
func (n *Node) permitExtend(keys, args []string) (any, error) {
	ttl, err := number(args[1])
	if err != nil {
		return nil, err
	}
	return n.renew(keys[0], nil, args[0], nowMillis(), ttl), nil
}

// permitRelease is the semaphore's release script: KEYS[0] is the set of
// permits, ARGV the secret and announce's flag. A permit given back is
// broadcast, as the script's doc comment says. n.mu is held.
func (n *Node) permitRelease(keys, args []string) (any, error) {
	now := nowMillis()
	removed := n.zrem(keys[0], args[0])
	n.spanLeases(keys[0], nil, now)
	if removed > 0 {
		n.announcerOf(args).broadcast(keys[0])
	}
	return removed, nil
}

// renew sets the lease of member in set to end ttl ms from now, and the
// TTL of the set and of others to the longest lease, and returns 1, if the
// member's lease has not ended; otherwise it returns 0 and changes nothing.
// n.mu is held.
func (n *Node) renew(set string, others []string, member string, now, ttl int64) int64 {
	if end, ok := n.zset(set)[member]; !ok || end <= now {
		return 0
	}
	n.zadd(set, member, now+ttl)
	n.spanLeases(set, others, now)
	return 1
}

// spanLeases sets the TTL of set and of the keys others to the end of the
// set's longest lease, or, when no lease is left, deletes them all and
// returns true. Leases that ended are dropped first. n.mu is held.
func (n *Node) spanLeases(set string, others []string, now int64) bool {
	n.dropEnded(set, now)
	s := n.zset(set)
	if len(s) == 0 {
		delete(n.keys, set)
		for _, k := range others {
			delete(n.keys, k)
		}
		return true
	}
	var top int64
	for _, end := range s {
		top = max(top, end)
	}
	life := time.Duration(top-now) * time.Millisecond
	n.pexpire(set, life)
	for _, k := range others {
		n.pexpire(k, life)
	}
	return false
}

// dropEnded removes the leases that ended by now from set, deleting the
// set when none is left, as Redis deletes an empty sorted set. n.mu is
// held.
func (n *Node) dropEnded(set string, now int64) {
	s := n.zset(set)
	for m, end := range s {
		if end <= now {
			delete(s, m)
		}
	}
	if s != nil && len(s) == 0 {
		delete(n.keys, set)
	}
}
