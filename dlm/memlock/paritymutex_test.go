package memlock

import (
	"slices"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// The arguments of the mutex's scripts in the parity cases.
const (
	life    = "2000" // ms, the life of a waiter's place
	reserve = "500"  // ms, how long a key handed on stays reserved
	bound   = "1024" // waiters in a line
)

// mkeys are the plain acquire's and the release's KEYS for the lock keys
// ks: the lock keys, then their lines.
func mkeys(ks ...string) []string {
	return append(slices.Clone(ks), script.LinesOf(ks)...)
}

// fkeys are the fenced acquire's KEYS for the lock keys ks: the lock keys,
// their counters, then their lines.
func fkeys(ks ...string) []string {
	out := slices.Clone(ks)
	for _, k := range ks {
		out = append(out, script.FenceKey(k))
	}
	return append(out, script.LinesOf(ks)...)
}

// guarded appends the guard key to an acquire's KEYS.
func guarded(keys []string) []string { return append(slices.Clone(keys), script.GuardKey(pk)) }

// waiting are the acquire scripts' waiter arguments of waiter id carrying
// ticket held, in a line of the default bound, without fairness; nobody's
// are a TryLock's, which takes no place; fairly's are those of a fair
// waiter.
func waiting(id, ticket string) []string { return []string{id, life, ticket, bound, "0"} }

var nobody = waiting("", "0")

func fairly(id, ticket string) []string { return []string{id, life, ticket, bound, "1"} }

// acq is an acquire's ARGV: pre (the secret, the TTL, the counters'
// expiry, the guard's window), the waiter's arguments and the flag.
func acq(pre, w []string, flag string) []string { return slices.Concat(pre, w, []string{flag}) }

// rel is Release's ARGV.
func rel(secret, id, ticket, how, flag string) []string {
	return []string{secret, id, ticket, life, reserve, how, flag}
}

// relBound is rel with the bound of a line.
func relBound(secret, id, ticket, how, bound, flag string) []string {
	return []string{secret, id, ticket, life, reserve, how, bound, flag}
}

// mutexCases are the cases of the mutex's acquire scripts and of its
// release, their branches without a line as with a TryLock, and each
// variant with a waiter; lineCases holds the line's rules.
func mutexCases() []parityCase {
	plain := []string{secret, ttl}
	fenced := []string{secret, ttl, "0"}
	fencedFx := []string{secret, ttl, fx}
	guard := []string{secret, ttl, window}
	guardFenced := []string{secret, ttl, "0", window}
	guardFencedFx := []string{secret, ttl, fx, window}
	fc := func(v string) preset { return str(script.FenceKey(pk), v, 0) }
	reservedFor := func(id string) preset { return str(pk, script.ReservedFor(id), 500) }
	return []parityCase{
		// Acquire: KEYS the lock keys, their lines; ARGV secret, TTL, the
		// waiter's five, flag.
		{name: "acquire/fresh key", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud)},
		{name: "acquire/fresh key, quiet", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, quiet)},
		{name: "acquire/fresh key, loud", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud)},
		{name: "acquire/held by same token", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud), setup: []preset{held(pk, secret)}},
		{name: "acquire/held by other token", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud), setup: []preset{held(pk, other)}},
		{name: "acquire/held without TTL", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud), setup: []preset{str(pk, other, 0)}},
		{name: "acquire/expired", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud), setup: []preset{{key: pk, val: other, expired: true}}},
		{name: "acquire/readers, writer waits", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, quietWait), setup: readersIn(map[string]int64{other: 5000})},
		{name: "acquire/readers, writer waits, loud", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, waits), setup: readersIn(map[string]int64{other: 5000})},
		{name: "acquire/readers, writer waits, placed", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), quietWait), setup: readersIn(map[string]int64{other: 5000})},
		{name: "acquire/readers, writer does not wait", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud), setup: readersIn(map[string]int64{other: 5000})},
		{name: "acquire/another's key, writer waits", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), quietWait), setup: []preset{held(pk, other)}},
		{name: "acquire/intent present", script: script.Acquire, keys: mkeys(pk), args: acq(plain, nobody, loud), setup: []preset{intent}},
		{name: "acquire/forged readers mark", script: script.Acquire, keys: mkeys(pk), args: acq([]string{script.ReadersMark, ttl}, nobody, loud), setup: []preset{str(pk, script.ReadersMark, 5000)}},
		{name: "acquire/forged reservation", script: script.Acquire, keys: mkeys(pk), args: acq([]string{script.ReservedFor(w1), ttl}, nobody, loud), setup: []preset{reservedFor(w1)}},
		{name: "acquire/forged reservation, another waiter", script: script.Acquire, keys: mkeys(pk), args: acq([]string{script.ReservedFor(w1), ttl}, waiting(w2, "50"), loud), setup: []preset{reservedFor(w1)}},
		{name: "acquire/two keys free", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, nobody, loud)},
		{name: "acquire/two keys, second held", script: script.Acquire, keys: mkeys(pk, pk2), args: acq(plain, nobody, loud), setup: []preset{held(pk2, other)}},
		{name: "acquire/refused, waiter placed", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: []preset{held(pk, other)}},
		{name: "acquire/refused, waiter placed, quiet sharded", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), script.Flag{Mode: script.QuietSharded}.Arg()), setup: []preset{held(pk, other)}},
		{name: "acquire/granted, waiter", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud)},
		{name: "acquire/fair, free, no line", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "50"), loud)},
		{name: "acquire/fair, free, only the ends of places left", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "50"), loud), setup: []preset{zset(script.LineKeys(pk)[1], 5000, map[string]int64{w2: 3000})}},
		{name: "acquire/fair, free, the waiter heads the line", script: script.Acquire, keys: mkeys(pk), args: acq(plain, fairly(w1, "50"), loud), setup: lineOf(pk, spot{w1, 1, 3000}, spot{w2, 2, 3000})},
		{name: "acquire/refused, listeners marked again", script: script.Acquire, keys: mkeys(pk), args: acq(plain, waiting(w1, "50"), loud), setup: []preset{held(pk, other), str(script.ListenKey(pk), "1", 100)}},

		// FencedAcquire: KEYS locks, counters, lines; ARGV secret, TTL,
		// expiry, the waiter's five, flag.
		{name: "fenced acquire/fresh", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, nobody, loud)},
		{name: "fenced acquire/counter present", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, nobody, loud), setup: []preset{fc("41")}},
		{name: "fenced acquire/held by other token", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, nobody, loud), setup: []preset{held(pk, other), fc("41")}},
		{name: "fenced acquire/held by same token", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, nobody, loud), setup: []preset{held(pk, secret), fc("41")}},
		{name: "fenced acquire/expiry, fresh", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fencedFx, nobody, loud), clock: true},
		{name: "fenced acquire/expiry, counter present", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fencedFx, nobody, loud), setup: []preset{str(script.FenceKey(pk), "7", 5000)}},
		{name: "fenced acquire/expiry, counter expired", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fencedFx, nobody, loud), setup: []preset{{key: script.FenceKey(pk), val: "7", expired: true}}, clock: true},
		{name: "fenced acquire/two keys, counters apart", script: script.FencedAcquire, keys: fkeys(pk, pk2), args: acq(fenced, nobody, loud), setup: []preset{fc("3"), str(script.FenceKey(pk2), "9", 0)}},
		{name: "fenced acquire/readers, writer waits", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, waiting(w1, "50"), quietWait), setup: readersIn(map[string]int64{other: 5000})},
		{name: "fenced acquire/intent present", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, nobody, quiet), setup: []preset{intent}},
		{name: "fenced acquire/refused, waiter placed", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, waiting(w1, "50"), quiet), setup: append([]preset{held(pk, other), fc("41")}, lineOf(pk, spot{w2, 4, 3000})...)},
		{name: "fenced acquire/reserved for the waiter", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, waiting(w1, "3"), quiet), setup: append([]preset{reservedFor(w1), fc("41")}, lineOf(pk, spot{w2, 4, 3000})...)},
		{name: "fenced acquire/reserved for another", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, waiting(w1, "3"), quiet), setup: []preset{reservedFor(w2), fc("41")}},
		{name: "fenced acquire/fair, refused to one behind the head", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fenced, fairly(w1, "50"), quiet), setup: append([]preset{fc("41")}, lineOf(pk, spot{w2, 1, 3000})...)},
		{name: "fenced acquire/fair, head takes it", script: script.FencedAcquire, keys: fkeys(pk), args: acq(fencedFx, fairly(w2, "1"), quiet), setup: append([]preset{str(script.FenceKey(pk), "41", 5000)}, lineOf(pk, spot{w2, 1, 3000}, spot{w1, 2, 3000})...)},
		{name: "fenced acquire/two keys, placed in both lines", script: script.FencedAcquire, keys: fkeys(pk, pk2), args: acq(fenced, waiting(w1, "50"), quiet), setup: append(lineOf(pk), append(lineOf(pk2), held(pk2, other))...)},

		// GuardedAcquire: KEYS locks, lines, the guard; ARGV secret, TTL,
		// window, the waiter's five, flag.
		{name: "guarded acquire/guard passed", script: script.GuardedAcquire, keys: guarded(mkeys(pk)), args: acq(guard, nobody, loud), setup: []preset{guardAt(-hour)}},
		{name: "guarded acquire/guard passed, held by other", script: script.GuardedAcquire, keys: guarded(mkeys(pk)), args: acq(guard, nobody, loud), setup: []preset{guardAt(-hour), held(pk, other)}},
		{name: "guarded acquire/guard ahead", script: script.GuardedAcquire, keys: guarded(mkeys(pk)), args: acq(guard, nobody, loud), setup: []preset{guardAt(hour)}},
		{name: "guarded acquire/guard ahead, held by same", script: script.GuardedAcquire, keys: guarded(mkeys(pk)), args: acq(guard, nobody, loud), setup: []preset{guardAt(hour), held(pk, secret)}},
		{name: "guarded acquire/guard passed, waiter placed", script: script.GuardedAcquire, keys: guarded(mkeys(pk)), args: acq(guard, waiting(w1, "50"), loud), setup: append([]preset{guardAt(-hour), held(pk, other)}, lineOf(pk, spot{w2, 1, 3000})...)},
		{name: "guarded acquire/guard ahead, no place", script: script.GuardedAcquire, keys: guarded(mkeys(pk)), args: acq(guard, waiting(w1, "50"), loud), setup: append([]preset{guardAt(hour), held(pk, other)}, lineOf(pk, spot{w2, 1, 3000})...)},
		{name: "guarded acquire/guard passed, reserved for the waiter", script: script.GuardedAcquire, keys: guarded(mkeys(pk)), args: acq(guard, waiting(w1, "50"), loud), setup: []preset{guardAt(-hour), reservedFor(w1)}},
		{name: "guarded acquire/guard passed, fair, refused to one behind the head", script: script.GuardedAcquire, keys: guarded(mkeys(pk)), args: acq(guard, fairly(w1, "50"), loud), setup: append([]preset{guardAt(-hour)}, lineOf(pk, spot{w2, 1, 3000})...)},
		{name: "guarded acquire/guard passed, two keys", script: script.GuardedAcquire, keys: guarded(mkeys(pk, pk2)), args: acq(guard, waiting(w1, "50"), loud), setup: append([]preset{guardAt(-hour), held(pk, other)}, lineOf(pk2)...)},

		// GuardedFencedAcquire: KEYS locks, counters, lines, the guard;
		// ARGV secret, TTL, expiry, window, the waiter's five, flag.
		{name: "guarded fenced acquire/guard passed", script: script.GuardedFencedAcquire, keys: guarded(fkeys(pk)), args: acq(guardFenced, nobody, loud), setup: []preset{guardAt(-hour), fc("5")}},
		{name: "guarded fenced acquire/guard passed, expiry", script: script.GuardedFencedAcquire, keys: guarded(fkeys(pk)), args: acq(guardFencedFx, nobody, loud), setup: []preset{guardAt(-hour), fc("5")}},
		{name: "guarded fenced acquire/guard ahead", script: script.GuardedFencedAcquire, keys: guarded(fkeys(pk)), args: acq(guardFenced, nobody, loud), setup: []preset{guardAt(hour), fc("5")}},
		{name: "guarded fenced acquire/guard passed, waiter placed", script: script.GuardedFencedAcquire, keys: guarded(fkeys(pk)), args: acq(guardFenced, waiting(w1, "6"), loud), setup: append([]preset{guardAt(-hour), fc("5"), held(pk, other)}, lineOf(pk, spot{w2, 2, 3000})...)},
		{name: "guarded fenced acquire/guard passed, reserved for the waiter", script: script.GuardedFencedAcquire, keys: guarded(fkeys(pk)), args: acq(guardFenced, fairly(w1, "6"), loud), setup: append([]preset{guardAt(-hour), fc("5"), reservedFor(w1)}, lineOf(pk, spot{w2, 2, 3000})...)},
		{name: "guarded fenced acquire/guard ahead, reserved for the waiter", script: script.GuardedFencedAcquire, keys: guarded(fkeys(pk)), args: acq(guardFenced, waiting(w1, "6"), loud), setup: []preset{guardAt(hour), fc("5"), reservedFor(w1)}},

		// Release: KEYS the lock keys, their lines; ARGV secret, waiter,
		// ticket, place life, reservation, how, flag.
		{name: "release/held by same token", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret)}},
		{name: "release/held by same token, quiet", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, quiet), setup: []preset{held(pk, secret)}},
		{name: "release/held by same token, loud", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret)}},
		{name: "release/held by other token", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, other)}},
		{name: "release/absent", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud)},
		{name: "release/expired", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{{key: pk, val: secret, expired: true}}},
		{name: "release/intent present", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret), intent}},
		{name: "release/intent present, writer waits on", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, waits), setup: []preset{held(pk, secret), intent}},
		{name: "release/intent present, held by other, writer waits on", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, waits), setup: []preset{held(pk, other), intent}},
		{name: "release/two keys, one another's", script: script.Release, keys: mkeys(pk, pk2), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret), held(pk2, other)}},
		{name: "release/forged readers mark", script: script.Release, keys: mkeys(pk), args: rel(script.ReadersMark, "", "0", script.ReleaseLock, loud), setup: readersIn(map[string]int64{other: 5000})},
		{name: "release/forged reservation", script: script.Release, keys: mkeys(pk), args: rel(script.ReservedFor(w1), "", "0", script.ReleaseLock, loud), setup: []preset{reservedFor(w1)}},
		{name: "release/forged reservation, failed attempt", script: script.Release, keys: mkeys(pk), args: rel(script.ReservedFor(w1), "", "0", script.ReleaseAttempt, loud), setup: []preset{reservedFor(w1)}},
		{name: "release/failed attempt", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseAttempt, loud), setup: []preset{held(pk, secret), intent}},
		{name: "release/failed attempt, writer waits on", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseAttempt, quietWait), setup: []preset{held(pk, secret), intent}},
		{name: "release/failed attempt, another's key", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseAttempt, quiet), setup: []preset{held(pk, other), intent}},
		{name: "release/keep turn without a waiter", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseKeepTurn, quiet), setup: []preset{held(pk, secret)}},
		// The quick release: nothing beside the keys, or one of the marks
		// that send it the full way.
		{name: "release/quick, the waiter's lock", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "5", script.ReleaseLock, loud), setup: []preset{held(pk, secret)}},
		{name: "release/quick, reserved for the waiter", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "5", script.ReleaseLock, loud), setup: []preset{reservedFor(w1)}},
		{name: "release/quick, reserved for another", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "5", script.ReleaseLock, loud), setup: []preset{reservedFor(w2)}},
		{name: "release/quick, failed attempt", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseAttempt, loud), setup: []preset{held(pk, secret)}},
		{name: "release/quick, two keys", script: script.Release, keys: mkeys(pk, pk2), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret), held(pk2, secret)}},
		{name: "release/listeners marked", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret), str(script.ListenKey(pk), "1", 5000)}},
		{name: "release/listeners marked, quiet", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, quiet), setup: []preset{held(pk, secret), str(script.ListenKey(pk), "1", 5000)}},
		{name: "release/listeners marked, handed on", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: append([]preset{held(pk, secret), str(script.ListenKey(pk), "1", 5000)}, lineOf(pk, spot{w2, 1, 3000})...)},
		{name: "release/listeners marked, failed attempt", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseAttempt, loud), setup: []preset{held(pk, secret), str(script.ListenKey(pk), "1", 5000)}},
		{name: "release/an election's leader key", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret), str(script.LeaderKey(pk), "v", 5000)}},
		{name: "release/the previous release's line", script: script.Release, keys: mkeys(pk), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: []preset{held(pk, secret), zset(pk+script.PreviousLineSuffix, 5000, map[string]int64{"old-waiter": 1})}},
		{name: "release/two keys, the second's line", script: script.Release, keys: mkeys(pk, pk2), args: rel(secret, "", "0", script.ReleaseLock, loud), setup: append([]preset{held(pk, secret), held(pk2, secret)}, lineOf(pk2, spot{w2, 1, 3000})...)},
		{name: "release/waiter's failed attempt, no line", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "5", script.ReleaseAttempt, loud), setup: []preset{held(pk, secret)}},
		{name: "release/an unknown how, as a failed attempt", script: script.Release, keys: mkeys(pk), args: rel(secret, w1, "2", "x", loud), setup: []preset{held(pk, secret)}},
	}
}
