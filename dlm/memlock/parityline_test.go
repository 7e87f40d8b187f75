package memlock

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// spot is a waiter's place in a preset line: its ticket, and the end of
// its place in ms from now.
type spot struct {
	id          string
	ticket, end int64
}

// lineOf is lock key k's line holding spots, both its keys living 5 s.
func lineOf(k string, spots ...spot) []preset { return lineTTL(k, 5000, spots...) }

// lineTTL is lineOf with the line's keys living ttl ms (0: no expiry).
func lineTTL(k string, ttl int64, spots ...spot) []preset {
	lk := script.LineKeys(k)
	var out []preset
	if len(spots) > 0 {
		tickets, ends := map[string]int64{}, map[string]int64{}
		for _, s := range spots {
			tickets[s.id], ends[s.id] = s.ticket, s.end
		}
		out = append(out, preset{key: lk[0], zset: tickets, tickets: true, ttl: ttl}, zset(lk[1], ttl, ends))
	}
	return out
}

// lineOrphans is lock key k's line holding spots and, among its waiters
// only, orphans by ticket: members without an end of their place, as a
// client that may write under the prefix, or the eviction of the ends
// alone, leaves them. Both keys live 5 s.
func lineOrphans(k string, orphans map[string]int64, spots ...spot) []preset {
	out := lineOf(k, spots...)
	if len(out) == 0 {
		return []preset{{key: script.LineKeys(k)[0], zset: maps.Clone(orphans), tickets: true, ttl: 5000}}
	}
	maps.Copy(out[0].zset, orphans)
	return out
}

// ghost and ghost2 are waiters without an end of their place.
var (
	ghost  = mgrB + strings.Repeat("g", script.WaiterIDLen-script.ManagerIDLen)
	ghost2 = mgrA + strings.Repeat("h", script.WaiterIDLen-script.ManagerIDLen)
)

// lineCases are the cases of the line of waiters: a refused waiter's place
// and ticket, fairness, the keys reserved for a waiter, the releases that
// hand a key on or give a waiter its place back, and Leave.
func lineCases() []parityCase {
	plain := []string{secret, ttl}
	reservedFor := func(id string) preset { return str(pk, script.ReservedFor(id), 500) }
	other2 := held(pk, other)
	// with is p and the presets of more.
	with := func(p preset, more ...[]preset) []preset { return slices.Concat(append([][]preset{{p}}, more...)...) }
	inLine := func(spots ...spot) []preset { return lineOf(pk, spots...) }
	leave := func(id, flag string) []string { return []string{id, reserve, flag} }
	// ended are 1500 waiters whose places ended: more than the Lua's
	// zremAll removes with one ZREM.
	var ended []spot
	for i := range 1500 {
		ended = append(ended, spot{fmt.Sprintf("%s%011d", mgrB, i), int64(i + 10), -1000})
	}
	const (
		limit    = "9007199254740992" // 2^53, script.FenceLimit
		belowLim = "9007199254740991"
	)
	return []parityCase{
		// A refused waiter's place.
		{name: "line/refused, placed behind the line", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: with(other2, inLine(spot{w2, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "line/refused, place renewed", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: with(other2, lineOf(pk, spot{w1, 5, 100}, spot{w2, 6, 3000}))},
		{name: "line/refused, place renewed under its ticket", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "9"), loud), setup: with(other2, lineOf(pk, spot{w1, 5, 100}))},
		{name: "line/refused without an id, no place", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud), setup: with(other2, inLine(spot{w2, 1, 3000}))},
		{name: "line/refused, line full", script: script.Acquire, keys: mkeys(pk), args: acq(plain, []string{w1, life, "50", "2", "0"}, loud), setup: with(other2, inLine(spot{w2, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "line/refused, line full, placed already", script: script.Acquire, keys: mkeys(pk), args: acq(plain, []string{w1, life, "50", "2", "0"}, loud), setup: with(other2, inLine(spot{w1, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "line/refused, line full but a place ended", script: script.Acquire, keys: mkeys(pk), args: acq(plain, []string{w1, life, "50", "2", "0"}, loud), setup: with(other2, inLine(spot{w2, 1, -1000}, spot{w3, 2, 3000}))},
		{name: "line/refused, no bound", script: script.Acquire, keys: mkeys(pk), args: acq(plain, []string{w1, life, "50", "-1", "0"}, loud), setup: with(other2, inLine(spot{w2, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "line/refused, a bound of 0", script: script.Acquire, keys: mkeys(pk), args: acq(plain, []string{w1, life, "50", "0", "0"}, loud), setup: []preset{other2}},
		{name: "line/refused, ended places dropped", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: with(other2, inLine(spot{w2, 1, -1000}, spot{w3, 2, 3000}))},
		{name: "line/refused, 1500 ended places dropped", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: with(other2, lineOf(pk, append(ended, spot{w3, 1600, 3000})...))},
		{name: "line/refused, the line's keys live the TTL", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: with(other2, lineTTL(pk, 1000, spot{w2, 1, 900}))},
		{name: "line/refused, the line's keys keep a longer TTL", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: with(other2, lineTTL(pk, 60000, spot{w2, 1, 3000}))},
		{name: "line/refused, the line's keys without expiry", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: with(other2, lineTTL(pk, 0, spot{w2, 1, 3000}))},
		{name: "line/refused, a place living longer than the TTL", script: script.Acquire, keys: mkeys(pk), args: acq(plain, []string{w1, "30000", "50", bound, "0"}, loud), setup: with(other2, inLine(spot{w2, 1, 3000}))},

		// A waiter's own ticket; one that is no number from 1 to below 2^53
		// reads as the node's clock in µs.
		{name: "ticket/carried just below 2^53", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, belowLim), loud), setup: with(other2, lineOf(pk, spot{w2, 3, 3000}))},
		{name: "ticket/2^53: the node's clock", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, limit), loud), setup: with(other2, lineOf(pk, spot{w2, 3, 3000})), clockTicket: true},
		{name: "ticket/2^63-1: the node's clock", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "9223372036854775807"), loud), setup: []preset{other2}, clockTicket: true},
		{name: "ticket/past int64: the node's clock", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "99999999999999999999999"), loud), setup: []preset{other2}, clockTicket: true},
		{name: "ticket/1e300: the node's clock", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "1e300"), loud), setup: []preset{other2}, clockTicket: true},
		{name: "ticket/negative: the node's clock", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "-5"), loud), setup: []preset{other2}, clockTicket: true},
		{name: "ticket/zero: the node's clock", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "0"), loud), setup: []preset{other2}, clockTicket: true},
		{name: "ticket/not a number: the node's clock", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "x"), loud), setup: []preset{other2}, clockTicket: true},
		{name: "ticket/2^53, placed already: the node's clock", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, limit), loud), setup: with(other2, lineOf(pk, spot{w1, 2, 3000})), clockTicket: true},
		{name: "ticket/two lines, placed in both", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, waiting(w1, "40"), loud), setup: slices.Concat([]preset{held(pk2, other)}, lineOf(pk, spot{w2, 3, 3000}), lineOf(pk2, spot{w3, 9, 3000}))},
		{name: "ticket/two lines, empty", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, waiting(w1, "12"), loud), setup: slices.Concat([]preset{held(pk2, other)}, lineOf(pk), lineOf(pk2))},
		{name: "ticket/two lines, the second full", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, []string{w1, life, "50", "1", "0"}, loud), setup: slices.Concat([]preset{held(pk, other)}, lineOf(pk2, spot{w3, 9, 3000}))},

		// Fairness, and the free key.
		{name: "fair/free key, empty line", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "50"), loud)},
		{name: "fair/free key, the head takes it", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "1"), loud), setup: inLine(spot{w1, 1, 3000}, spot{w2, 2, 3000})},
		{name: "fair/free key, refused to one behind the head", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w2, "2"), loud), setup: inLine(spot{w1, 1, 3000}, spot{w2, 2, 3000})},
		{name: "fair/free key, refused to a newcomer", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w3, "50"), loud), setup: inLine(spot{w1, 1, 3000})},
		{name: "fair/free key, refused without an id", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly("", "0"), loud), setup: inLine(spot{w1, 1, 3000})},
		{name: "fair/the head's place ended", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w2, "2"), loud), setup: inLine(spot{w1, 1, -1000}, spot{w2, 2, 3000})},
		{name: "fair/every place ended", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w3, "50"), loud), setup: inLine(spot{w1, 1, -1000}, spot{w2, 2, -1000})},
		{name: "fair/held by the same token", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w2, "2"), loud), setup: with(held(pk, secret), inLine(spot{w1, 1, 3000}, spot{w2, 2, 3000}))},
		{name: "fair/equal tickets, the first id heads", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "1"), loud), setup: inLine(spot{w3, 1, 3000}, spot{w1, 1, 3000})},
		{name: "fair/two keys, the second's line headed by another", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, fairly(w1, "1"), loud), setup: slices.Concat(lineOf(pk, spot{w1, 1, 3000}), lineOf(pk2, spot{w3, 1, 3000}))},
		{name: "fair/two keys, head of both", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, fairly(w1, "1"), loud), setup: slices.Concat(lineOf(pk, spot{w1, 1, 3000}, spot{w2, 2, 3000}), lineOf(pk2, spot{w1, 1, 3000}))},
		// A waiter without an end of its place is dropped at the head.
		{name: "fair/free key, a waiter without an end heads the line", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "50"), loud), setup: lineOrphans(pk, map[string]int64{ghost: 1})},
		{name: "fair/free key, two without an end ahead of the head", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "5"), loud), setup: lineOrphans(pk, map[string]int64{ghost: 1, ghost2: 2}, spot{w1, 5, 3000})},
		{name: "fair/free key, one without an end, then another's place", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w3, "50"), loud), setup: lineOrphans(pk, map[string]int64{ghost: 1}, spot{w2, 2, 3000})},
		{name: "fair/free key, one without an end behind the head, kept", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "1"), loud), setup: lineOrphans(pk, map[string]int64{ghost: 5}, spot{w1, 1, 3000})},
		{name: "fair/free key, the ends evicted", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w3, "50"), loud), setup: lineOrphans(pk, map[string]int64{ghost: 1, w1: 2, w2: 3})},
		{name: "fair/free key, without an id, one without an end", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly("", "0"), loud), setup: lineOrphans(pk, map[string]int64{ghost: 1})},
		{name: "fair/one without an end, the head's place ended", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w3, "50"), loud), setup: lineOrphans(pk, map[string]int64{ghost: 2}, spot{w1, 1, -1000})},
		{name: "line/refused, the line full of waiters without an end", script: script.Acquire, keys: mkeys(pk), args: acq(plain, []string{w1, life, "50", "2", "0"}, loud), setup: with(other2, lineOrphans(pk, map[string]int64{ghost: 1, ghost2: 2}))},
		{name: "not fair/one behind the head takes a free key", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w2, "2"), loud), setup: inLine(spot{w1, 1, 3000}, spot{w2, 2, 3000})},
		{name: "not fair/a newcomer takes a free key", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w3, "50"), loud), setup: inLine(spot{w1, 1, 3000})},

		// Keys reserved for a waiter.
		{name: "reserved/taken by its waiter", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "1"), loud), setup: with(reservedFor(w1), inLine(spot{w2, 2, 3000}))},
		{name: "reserved/taken by its waiter, fair, another heads the line", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w2, "3"), loud), setup: with(reservedFor(w2), inLine(spot{w1, 1, 3000}))},
		{name: "reserved/refused to another waiter", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w2, "2"), loud), setup: with(reservedFor(w1), inLine(spot{w2, 2, 3000}))},
		{name: "reserved/refused to the head, reserved for another", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w2, "1"), loud), setup: with(reservedFor(w1), inLine(spot{w2, 1, 3000}))},
		{name: "reserved/refused without an id", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud), setup: []preset{reservedFor(w1)}},
		{name: "reserved/two keys, one reserved, one free", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, waiting(w1, "1"), loud), setup: []preset{reservedFor(w1)}},
		{name: "reserved/two keys, one reserved for another", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, waiting(w1, "1"), loud), setup: []preset{reservedFor(w1), str(pk2, script.ReservedFor(w2), 500)}},

		// ReleaseLock: the key handed on.
		{name: "hand on/to the head", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "hand on/sharded", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, sharded), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "hand on/quiet sharded: freed, nothing handed on", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, script.Flag{Mode: script.QuietSharded}.Arg()), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}))},
		{name: "hand on/the releaser leaves its place first", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseLock, loud), setup: with(held(pk, secret), inLine(spot{w1, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "hand on/no waiter, broadcast", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret)}},
		{name: "hand on/quiet, the key freed", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, quiet), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}))},
		{name: "hand on/the head's place ended", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: with(held(pk, secret), inLine(spot{w2, 1, -1000}, spot{w3, 2, 3000}))},
		{name: "hand on/every place ended", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: with(held(pk, secret), inLine(spot{w2, 1, -1000}))},
		{name: "hand on/past a waiter without an end", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: with(held(pk, secret), lineOrphans(pk, map[string]int64{ghost: 1}, spot{w3, 2, 3000}))},
		{name: "hand on/only waiters without an end, broadcast", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: with(held(pk, secret), lineOrphans(pk, map[string]int64{ghost: 1, ghost2: 2}))},
		{name: "hand on/a free key", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: inLine(spot{w2, 1, 3000})},
		{name: "hand on/a free key, loud", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: inLine(spot{w2, 1, 3000})},
		{name: "hand on/a free key, empty line", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, loud)},
		{name: "hand on/a key reserved for the releaser", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseLock, loud), setup: with(reservedFor(w1), inLine(spot{w2, 2, 3000}))},
		{name: "hand on/a key reserved for the releaser, empty line", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseLock, loud), setup: []preset{reservedFor(w1), intent}},
		{name: "hand on/a key reserved for another", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseLock, loud), setup: with(reservedFor(w2), inLine(spot{w1, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "hand on/another's key, the releaser leaves the line", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseLock, loud), setup: with(held(pk, other), inLine(spot{w1, 1, 3000}, spot{w2, 2, 3000}))},
		{name: "hand on/the intent deleted", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}), []preset{intent})},
		{name: "hand on/two keys, each to its head", script: script.Release, keys: mkeys(pk, pk2), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: slices.Concat([]preset{held(pk, secret), held(pk2, secret)}, lineOf(pk, spot{w2, 1, 3000}), lineOf(pk2, spot{w3, 1, 3000}))},
		{name: "hand on/two keys, one another's", script: script.Release, keys: mkeys(pk, pk2), args: rel(secret, w1, "0", script.ReleaseLock, loud), setup: slices.Concat([]preset{held(pk, secret), held(pk2, other)}, lineOf(pk, spot{w2, 1, 3000}), lineOf(pk2, spot{w1, 1, 3000}, spot{w3, 2, 3000}))},

		// ReleaseAttempt and ReleaseKeepTurn: the waiter's place back.
		{name: "failed attempt/placed back under its ticket", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "3", script.ReleaseAttempt, quiet), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}))},
		{name: "failed attempt/placed back, loud, nothing announced", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "3", script.ReleaseAttempt, loud), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}))},
		{name: "failed attempt/placed already, its ticket", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "5", script.ReleaseAttempt, quiet), setup: with(held(pk, secret), lineOf(pk, spot{w1, 2, 3000}, spot{w2, 6, 3000}))},
		{name: "failed attempt/no ticket: the node's clock", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "0", script.ReleaseAttempt, quiet), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000})), clockTicket: true},
		{name: "failed attempt/a ticket of 2^53: the node's clock", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, limit, script.ReleaseAttempt, quiet), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000})), clockTicket: true},
		{name: "failed attempt/a ticket just below 2^53", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, belowLim, script.ReleaseAttempt, quiet), setup: []preset{held(pk, secret)}},
		{name: "failed attempt/another's key, placed back", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "3", script.ReleaseAttempt, quiet), setup: []preset{held(pk, other)}},
		{name: "failed attempt/the line's keys live the place's life", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "3", script.ReleaseAttempt, quiet), setup: with(held(pk, secret), lineTTL(pk, 500, spot{w2, 1, 400}))},
		{name: "failed attempt/the line's keys keep a longer TTL", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "3", script.ReleaseAttempt, quiet), setup: with(held(pk, secret), lineTTL(pk, 60000, spot{w2, 1, 3000}))},
		{name: "failed attempt/ended places dropped", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "3", script.ReleaseAttempt, quiet), setup: with(held(pk, secret), inLine(spot{w2, 1, -1000}))},
		{name: "failed attempt/a writer waits on, intent kept", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "3", script.ReleaseAttempt, quietWait), setup: []preset{held(pk, secret), intent}},
		{name: "failed attempt/two keys", script: script.Release, keys: mkeys(pk, pk2), args: rel(secret, w1, "4", script.ReleaseAttempt, quiet), setup: slices.Concat([]preset{held(pk, secret), held(pk2, other)}, lineOf(pk), lineOf(pk2))},
		{name: "failed attempt/bounded: a full line, no place", script: script.Release, keys: mkeys(pk), args: relBound(secret, w1, "3", script.ReleaseAttempt, "2", quiet), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}, spot{w3, 2, 3000}))},
		{name: "failed attempt/bounded: placed already, kept", script: script.Release, keys: mkeys(pk), args: relBound(secret, w1, "3", script.ReleaseAttempt, "2", quiet), setup: with(held(pk, secret), inLine(spot{w1, 3, 3000}, spot{w2, 1, 3000}))},
		{name: "failed attempt/bounded: room once ended places dropped", script: script.Release, keys: mkeys(pk), args: relBound(secret, w1, "3", script.ReleaseAttempt, "2", quiet), setup: with(held(pk, secret), inLine(spot{w2, 1, -1000}, spot{w3, 2, 3000}))},
		{name: "failed attempt/bounded: room", script: script.Release, keys: mkeys(pk), args: relBound(secret, w1, "3", script.ReleaseAttempt, "2", quiet), setup: with(held(pk, secret), inLine(spot{w2, 1, 3000}))},
		{name: "keep turn/bounded: placed back whatever the bound", script: script.Release, keys: mkeys(pk), args: relBound(secret, w1, "1", script.ReleaseKeepTurn, "1", quiet), setup: with(held(pk, secret), inLine(spot{w2, 2, 3000}))},
		{name: "keep turn/reserved again, placed back", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseKeepTurn, quiet), setup: with(held(pk, secret), inLine(spot{w2, 2, 3000}))},
		{name: "keep turn/loud, nothing announced", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseKeepTurn, loud), setup: with(held(pk, secret), inLine(spot{w2, 2, 3000}))},
		{name: "keep turn/another's key", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseKeepTurn, quiet), setup: []preset{held(pk, other)}},
		{name: "keep turn/a writer waits on", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "1", script.ReleaseKeepTurn, quietWait), setup: []preset{held(pk, secret), intent}},
		{name: "keep turn/two keys, one lost", script: script.Release, keys: mkeys(pk, pk2), args: rel(secret, w1, "1", script.ReleaseKeepTurn, quiet), setup: []preset{held(pk, secret)}},

		// Leave: KEYS the lock keys, their lines; ARGV the waiter, the
		// reservation, flag.
		{name: "leave/reserved, nobody next, listeners marked", script: script.Leave, keys: mkeys(pk), args: leave(w1, loud), setup: with(reservedFor(w1), inLine(spot{w1, 1, 3000}), []preset{str(script.ListenKey(pk), "1", 5000)})},
		{name: "leave/reserved, handed on", script: script.Leave, keys: mkeys(pk), args: leave(w1, loud), setup: with(reservedFor(w1), inLine(spot{w1, 1, 3000}, spot{w2, 2, 3000}))},
		{name: "leave/reserved, the next's place ended", script: script.Leave, keys: mkeys(pk), args: leave(w1, loud), setup: with(reservedFor(w1), inLine(spot{w2, 2, -1000}, spot{w3, 3, 3000}))},
		{name: "leave/reserved, the next without an end", script: script.Leave, keys: mkeys(pk), args: leave(w1, loud), setup: with(reservedFor(w1), lineOrphans(pk, map[string]int64{ghost: 2}, spot{w1, 1, 3000}, spot{w3, 3, 3000}))},
		{name: "leave/reserved, empty line: freed, broadcast", script: script.Leave, keys: mkeys(pk), args: leave(w1, loud), setup: []preset{reservedFor(w1)}},
		{name: "leave/reserved, quiet: freed", script: script.Leave, keys: mkeys(pk), args: leave(w1, quiet), setup: with(reservedFor(w1), inLine(spot{w2, 2, 3000}))},
		{name: "leave/another's key: the place given up", script: script.Leave, keys: mkeys(pk), args: leave(w1, loud), setup: with(other2, inLine(spot{w1, 1, 3000}, spot{w2, 2, 3000}))},
		{name: "leave/reserved for another", script: script.Leave, keys: mkeys(pk), args: leave(w1, loud), setup: with(reservedFor(w2), inLine(spot{w1, 1, 3000}, spot{w3, 3, 3000}))},
		{name: "leave/a free key", script: script.Leave, keys: mkeys(pk), args: leave(w1, loud), setup: inLine(spot{w1, 1, 3000})},
		{name: "leave/two keys", script: script.Leave, keys: mkeys(pk, pk2), args: leave(w1, loud), setup: slices.Concat([]preset{reservedFor(w1), str(pk2, script.ReservedFor(w1), 500)}, lineOf(pk, spot{w1, 1, 3000}, spot{w2, 2, 3000}), lineOf(pk2, spot{w1, 1, 3000}))},
	}
}
