package memlock

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// The flags of the parity cases.
var (
	loud      = script.Flag{Mode: script.Loud}.Arg()
	quiet     = script.Flag{}.Arg()
	waits     = script.Flag{Mode: script.Loud, WriterWaits: true}.Arg()
	quietWait = script.Flag{WriterWaits: true}.Arg()
	sharded   = script.Flag{Mode: script.Sharded}.Arg()
)

// held is key k held by v for 5 s.
func held(k, v string) preset { return str(k, v, 5000) }

// intent is a waiting writer's intent on pk.
var intent = str(script.IntentKey(pk), "1", 5000)

// parityCases are the cases of every script memlock runs.
func parityCases() []parityCase {
	return slices.Concat(mutexCases(), lineCases(), otherCases())
}

// otherCases are the cases of the scripts other than the mutex's acquire
// and release scripts and Leave: the extension and the fencing counters,
// the election's and the server's scripts, the read lock and the
// semaphore.
func otherCases() []parityCase {
	fenced := []string{pk, script.FenceKey(pk)}
	rkeys := []string{pk, readers, script.IntentKey(pk)}
	// rrkeys are ReadRelease's keys: the lock key, the readers and the
	// lock key's line.
	rrkeys := append([]string{pk, readers}, script.LineKeys(pk)...)
	reservedFor := func(id string) preset { return str(pk, script.ReservedFor(id), 500) }
	// leaderMax is the bound of a leader's key: a secret, ':' and the
	// longest leader value.
	leaderMax := []string{strconv.Itoa(len(secret) + 1 + dlm.MaxLeaderValueLen), strconv.Itoa(script.LeaderDigestLen + dlm.MaxLeaderValueLen)}
	// lk is pk's leader key, lkeys the keys of an election's scripts.
	lk := script.LeaderKey(pk)
	lkeys := []string{pk, lk}
	return []parityCase{
		// Extend: KEYS the lock keys; ARGV secret, TTL.
		{name: "extend/held by same token", script: script.Extend, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{held(pk, secret)}},
		{name: "extend/held by other token", script: script.Extend, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{held(pk, other)}},
		{name: "extend/absent", script: script.Extend, keys: []string{pk}, args: []string{secret, ttl}},
		{name: "extend/expired", script: script.Extend, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{{key: pk, val: secret, expired: true}}},
		{name: "extend/two keys, second lost", script: script.Extend, keys: []string{pk, pk2}, args: []string{secret, ttl}, setup: []preset{held(pk, secret)}},
		{name: "extend/forged readers mark", script: script.Extend, keys: []string{pk}, args: []string{script.ReadersMark, ttl}, setup: readersIn(map[string]int64{other: 5000})},
		{name: "extend/forged reservation", script: script.Extend, keys: []string{pk}, args: []string{script.ReservedFor(w1), ttl}, setup: []preset{reservedFor(w1)}},
		{name: "extend/forged reserved prefix", script: script.Extend, keys: []string{pk}, args: []string{script.ReservedPrefix + "x", ttl}, setup: []preset{held(pk, script.ReservedPrefix+"x")}},

		// ExtendBatch: KEYS each entry's keys in turn; ARGV per group kind, TTL, count, then the secrets.
		{name: "extend batch/each kind extended", script: script.ExtendBatch, keys: []string{pk2, pk, readers, permits},
			args:  []string{script.BatchLock(1), ttl, "1", secret, script.BatchRead, ttl, "1", secret, script.BatchPermit, ttl, "1", secret},
			setup: append(readersIn(map[string]int64{secret: 5000, other: 3000}), held(pk2, secret), zset(permits, 5000, map[string]int64{secret: 5000, other: 3000}))},
		{name: "extend batch/failures stay with their entries", script: script.ExtendBatch, keys: []string{pk2, pk, readers, permits},
			args:  []string{script.BatchLock(1), ttl, "1", secret, script.BatchRead, ttl, "1", secret, script.BatchPermit, ttl, "1", secret},
			setup: append(readersIn(map[string]int64{secret: 5000}), held(pk2, other), zset(permits, 5000, map[string]int64{secret: -1000, other: 5000}))},
		{name: "extend batch/a lock over two keys, second lost", script: script.ExtendBatch, keys: []string{pk, pk2, permits},
			args:  []string{script.BatchLock(2), ttl, "1", secret, script.BatchPermit, ttl, "1", secret},
			setup: []preset{held(pk, secret), zset(permits, 5000, map[string]int64{secret: 5000})}},
		{name: "extend batch/secrets and TTLs of their own", script: script.ExtendBatch, keys: []string{pk, pk2},
			args:  []string{script.BatchLock(1), ttl, "1", secret, script.BatchLock(1), "20000", "1", other},
			setup: []preset{held(pk, secret), held(pk2, other)}},
		{name: "extend batch/absent and expired", script: script.ExtendBatch, keys: []string{pk, pk2},
			args:  []string{script.BatchLock(1), ttl, "2", secret, secret},
			setup: []preset{{key: pk2, val: secret, expired: true}}},
		{name: "extend batch/leadership with its value", script: script.ExtendBatch, keys: []string{pk, lk, pk2},
			args:  []string{script.BatchLeader, ttl, "1", secret, script.BatchLock(1), ttl, "1", secret},
			setup: []preset{held(pk, secret), str(lk, digest(secret)+"v", 1000), held(pk2, secret)}},
		{name: "extend batch/leadership lost, value kept as it was", script: script.ExtendBatch, keys: []string{pk, lk},
			args:  []string{script.BatchLeader, ttl, "1", secret},
			setup: []preset{held(pk, other), str(lk, digest(secret)+"v", 1000)}},
		{name: "extend batch/leadership without a value", script: script.ExtendBatch, keys: []string{pk, lk},
			args:  []string{script.BatchLeader, ttl, "1", secret},
			setup: []preset{held(pk, secret)}},
		{name: "extend batch/leadership, forged reservation", script: script.ExtendBatch, keys: []string{pk, lk},
			args:  []string{script.BatchLeader, ttl, "1", script.ReservedFor(w1)},
			setup: []preset{reservedFor(w1), str(lk, "x", 1000)}},
		{name: "extend batch/forged readers mark", script: script.ExtendBatch, keys: []string{pk, pk, readers},
			args:  []string{script.BatchLock(1), ttl, "1", script.ReadersMark, script.BatchRead, ttl, "1", other},
			setup: readersIn(map[string]int64{other: 5000})},
		{name: "extend batch/forged reservation", script: script.ExtendBatch, keys: []string{pk},
			args:  []string{script.BatchLock(1), ttl, "1", script.ReservedFor(w1)},
			setup: []preset{reservedFor(w1)}},
		{name: "extend batch/a group of two, the second lost", script: script.ExtendBatch, keys: []string{pk, pk2, permits},
			args:  []string{script.BatchLock(1), ttl, "2", secret, secret, script.BatchPermit, "20000", "1", other},
			setup: []preset{held(pk, secret), held(pk2, other), zset(permits, 5000, map[string]int64{other: 5000})}},
		{name: "extend batch/reader, writer holds", script: script.ExtendBatch, keys: []string{pk, readers},
			args:  []string{script.BatchRead, ttl, "1", secret},
			setup: []preset{held(pk, other)}},

		// RaiseFence: KEYS locks then counters; ARGV secret, token.
		{name: "raise fence/below", script: script.RaiseFence, keys: fenced, args: []string{secret, "10"}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "3", 0)}},
		{name: "raise fence/below, counter expiring", script: script.RaiseFence, keys: fenced, args: []string{secret, "10"}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "3", 20000)}},
		{name: "raise fence/above", script: script.RaiseFence, keys: fenced, args: []string{secret, "10"}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "12", 0)}},
		{name: "raise fence/counter missing", script: script.RaiseFence, keys: fenced, args: []string{secret, "10"}, setup: []preset{held(pk, secret)}},
		{name: "raise fence/forged reservation", script: script.RaiseFence, keys: fenced, args: []string{script.ReservedFor(w1), "10"}, setup: []preset{reservedFor(w1), str(script.FenceKey(pk), "3", 0)}},
		{name: "raise fence/held by other token", script: script.RaiseFence, keys: fenced, args: []string{secret, "10"}, setup: []preset{held(pk, other), str(script.FenceKey(pk), "3", 0)}},

		// ReadFence: KEYS locks then counters; ARGV secret.
		{name: "read fence/held by same token", script: script.ReadFence, keys: fenced, args: []string{secret}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "5", 0)}},
		{name: "read fence/held, counter missing", script: script.ReadFence, keys: fenced, args: []string{secret}, setup: []preset{held(pk, secret)}},
		{name: "read fence/held, counter expiring", script: script.ReadFence, keys: fenced, args: []string{secret}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "9", 20000)}},
		{name: "read fence/held, counter not a number", script: script.ReadFence, keys: fenced, args: []string{secret}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "1e3", 0)}},
		{name: "read fence/held by other token", script: script.ReadFence, keys: fenced, args: []string{secret}, setup: []preset{held(pk, other), str(script.FenceKey(pk), "5", 0)}},
		{name: "read fence/absent", script: script.ReadFence, keys: fenced, args: []string{secret}, setup: []preset{str(script.FenceKey(pk), "5", 0)}},
		{name: "read fence/expired", script: script.ReadFence, keys: fenced, args: []string{secret}, setup: []preset{{key: pk, val: secret, expired: true}, str(script.FenceKey(pk), "5", 0)}},
		{name: "read fence/two keys, counters apart", script: script.ReadFence, keys: []string{pk, pk2, script.FenceKey(pk), script.FenceKey(pk2)}, args: []string{secret}, setup: []preset{held(pk, secret), held(pk2, secret), str(script.FenceKey(pk), "3", 0), str(script.FenceKey(pk2), "9", 0)}},
		{name: "read fence/two keys, second another's", script: script.ReadFence, keys: []string{pk, pk2, script.FenceKey(pk), script.FenceKey(pk2)}, args: []string{secret}, setup: []preset{held(pk, secret), held(pk2, other), str(script.FenceKey(pk), "3", 0)}},
		{name: "read fence/forged reservation", script: script.ReadFence, keys: fenced, args: []string{script.ReservedFor(w1)}, setup: []preset{reservedFor(w1), str(script.FenceKey(pk), "5", 0)}},
		{name: "read fence/forged readers mark", script: script.ReadFence, keys: fenced, args: []string{script.ReadersMark}, setup: append(readersIn(map[string]int64{other: 5000}), str(script.FenceKey(pk), "5", 0))},

		// Status: KEYS the lock key, its counter.
		{name: "status/absent", script: script.Status, keys: fenced, near: []int{0}},
		{name: "status/held, fenced", script: script.Status, keys: fenced, near: []int{0}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "5", 0)}},
		{name: "status/held without TTL", script: script.Status, keys: fenced, near: []int{0}, setup: []preset{str(pk, secret, 0)}},
		{name: "status/reserved for a waiter", script: script.Status, keys: fenced, near: []int{0}, setup: []preset{reservedFor(w1), str(script.FenceKey(pk), "5", 0)}},
		{name: "status/held by a value like a reservation's", script: script.Status, keys: fenced, near: []int{0}, setup: []preset{held(pk, "dlm:nex")}},

		// StatusOwner: KEYS the lock key, its counter.
		{name: "status owner/absent", script: script.StatusOwner, keys: fenced, near: []int{0}},
		{name: "status owner/held, no label", script: script.StatusOwner, keys: fenced, near: []int{0}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "5", 0)}},
		{name: "status owner/held, labelled", script: script.StatusOwner, keys: fenced, near: []int{0}, setup: []preset{held(pk, secret), held(script.OwnerKey(pk), digest(secret)+"1700000000000 web-3 42 job")}},
		{name: "status owner/another's label", script: script.StatusOwner, keys: fenced, near: []int{0}, setup: []preset{held(pk, secret), held(script.OwnerKey(pk), digest(other)+"1700000000000 web-3 42 job")}},
		{name: "status owner/label without a time", script: script.StatusOwner, keys: fenced, near: []int{0}, setup: []preset{held(pk, secret), held(script.OwnerKey(pk), digest(secret)+"nolabel")}},
		{name: "status owner/label too long", script: script.StatusOwner, keys: fenced, near: []int{0}, setup: []preset{held(pk, secret), held(script.OwnerKey(pk), digest(secret)+"1 "+strings.Repeat("x", script.MaxOwnerValue))}},
		{name: "status owner/reserved", script: script.StatusOwner, keys: fenced, near: []int{0}, setup: []preset{reservedFor(w1)}},

		// TouchOwner: KEYS the lock key, its owner key; ARGV the secret.
		{name: "touch owner/held", script: script.TouchOwner, keys: []string{pk, script.OwnerKey(pk)}, args: []string{secret}, setup: []preset{held(pk, secret), str(script.OwnerKey(pk), digest(secret)+"1 h 1 n", 1000)}},
		{name: "touch owner/another's", script: script.TouchOwner, keys: []string{pk, script.OwnerKey(pk)}, args: []string{secret}, setup: []preset{held(pk, other), str(script.OwnerKey(pk), digest(other)+"1 h 1 n", 1000)}},
		{name: "touch owner/no label", script: script.TouchOwner, keys: []string{pk, script.OwnerKey(pk)}, args: []string{secret}, setup: []preset{held(pk, secret)}},

		// ForceRelease: KEYS the lock key, readers, intent, permits.
		{name: "force release/held", script: script.ForceRelease, keys: []string{pk, pk + script.ReadersSuffix, script.IntentKey(pk), pk + script.PermitsSuffix}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "5", 0)}},
		{name: "force release/absent", script: script.ForceRelease, keys: []string{pk, pk + script.ReadersSuffix, script.IntentKey(pk), pk + script.PermitsSuffix}},

		// Leader: KEYS the election's lock key, its leader key; ARGV the
		// longest lock key's and leader key's values read.
		{name: "leader/absent", script: script.Leader, keys: lkeys, args: leaderMax},
		{name: "leader/absent, a leader key left", script: script.Leader, keys: lkeys, args: leaderMax, setup: []preset{held(lk, digest(secret)+"v")}},
		{name: "leader/held with its value", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret), held(lk, digest(secret)+"10.0.0.1:80")}},
		{name: "leader/held with an empty value", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret), held(lk, digest(secret))}},
		{name: "leader/held, no value stored yet", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret)}},
		{name: "leader/held, another's value", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret), held(lk, digest(other)+"theirs")}},
		{name: "leader/held, a short leader key", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret), held(lk, "abc")}},
		{name: "leader/held without TTL", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{str(pk, secret, 0), str(lk, digest(secret)+"v", 0)}},
		{name: "leader/value of the longest size", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret), held(lk, digest(secret)+strings.Repeat("v", dlm.MaxLeaderValueLen))}},
		{name: "leader/oversized leader key", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret), held(lk, digest(secret)+strings.Repeat("v", dlm.MaxLeaderValueLen+1))}},
		{name: "leader/previous release's value in the secret", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret+":10.0.0.1:80"), held(lk, digest(secret)+"ignored")}},
		{name: "leader/previous release's longest value", script: script.Leader, keys: lkeys, args: leaderMax, near: []int{1}, setup: []preset{held(pk, secret+":"+strings.Repeat("v", dlm.MaxLeaderValueLen))}},
		{name: "leader/oversized lock key", script: script.Leader, keys: lkeys, args: leaderMax, setup: []preset{held(pk, secret+":"+strings.Repeat("v", dlm.MaxLeaderValueLen+1))}},
		{name: "leader/reserved for a candidate", script: script.Leader, keys: lkeys, args: leaderMax, setup: []preset{reservedFor(w1), held(lk, digest(script.ReservedFor(w1))+"v")}},
		{name: "leader/readers mark", script: script.Leader, keys: lkeys, args: leaderMax, setup: []preset{held(pk, script.ReadersMark)}},
		{name: "leader/reserved prefix with a value", script: script.Leader, keys: lkeys, args: leaderMax, setup: []preset{held(pk, script.ReservedPrefix+"x:10.0.0.1:80")}},
		{name: "leader/oversized reserved value", script: script.Leader, keys: lkeys, args: []string{"8", "8"}, setup: []preset{reservedFor(w1)}},
		{name: "leader/oversized value without TTL", script: script.Leader, keys: lkeys, args: leaderMax, setup: []preset{str(pk, strings.Repeat("v", 1<<20), 0)}},

		// SetLeader: KEYS the election's lock key, its leader key; ARGV the
		// secret, the value, the flag.
		{name: "set leader/held", script: script.SetLeader, keys: lkeys, args: []string{secret, "10.0.0.1:80", loud}, setup: []preset{held(pk, secret)}},
		{name: "set leader/held, quiet", script: script.SetLeader, keys: lkeys, args: []string{secret, "v", quiet}, setup: []preset{held(pk, secret)}},
		{name: "set leader/replaces another's", script: script.SetLeader, keys: lkeys, args: []string{secret, "", loud}, setup: []preset{held(pk, secret), held(lk, digest(other)+"theirs")}},
		{name: "set leader/held by another", script: script.SetLeader, keys: lkeys, args: []string{secret, "v", loud}, setup: []preset{held(pk, other)}},
		{name: "set leader/absent", script: script.SetLeader, keys: lkeys, args: []string{secret, "v", loud}},
		{name: "set leader/expired", script: script.SetLeader, keys: lkeys, args: []string{secret, "v", loud}, setup: []preset{{key: pk, val: secret, expired: true}}},
		{name: "set leader/held without TTL", script: script.SetLeader, keys: lkeys, args: []string{secret, "v", loud}, setup: []preset{str(pk, secret, 0)}},
		{name: "set leader/forged reservation", script: script.SetLeader, keys: lkeys, args: []string{script.ReservedFor(w1), "v", loud}, setup: []preset{reservedFor(w1)}},

		// ServerID.
		{name: "server id", script: script.ServerID, id: true},

		// ServerProbe: KEYS the probe key; ARGV the value, its TTL.
		{name: "server probe/absent", script: script.ServerProbe, keys: []string{pk}, args: []string{secret, ttl}},
		{name: "server probe/present", script: script.ServerProbe, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{held(pk, other)}},
		{name: "server probe/expired", script: script.ServerProbe, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{{key: pk, val: other, expired: true}}},

		// ReadAcquire: KEYS the lock key, readers, intent; ARGV secret, TTL, flag.
		{name: "read acquire/fresh", script: script.ReadAcquire, keys: rkeys, args: []string{secret, ttl, quiet}},
		{name: "read acquire/reserved for a writer", script: script.ReadAcquire, keys: rkeys, args: []string{secret, ttl, quiet}, setup: []preset{reservedFor(w1)}},
		{name: "read acquire/writer holds", script: script.ReadAcquire, keys: rkeys, args: []string{secret, ttl, quiet}, setup: []preset{held(pk, other)}},
		{name: "read acquire/intent present", script: script.ReadAcquire, keys: rkeys, args: []string{secret, ttl, quiet}, setup: append(readersIn(map[string]int64{other: 5000}), intent)},
		{name: "read acquire/intent present, reader in", script: script.ReadAcquire, keys: rkeys, args: []string{secret, ttl, quiet}, setup: append(readersIn(map[string]int64{secret: 5000}), intent)},
		{name: "read acquire/reader with a longer lease", script: script.ReadAcquire, keys: rkeys, args: []string{secret, ttl, quiet}, setup: readersIn(map[string]int64{other: 20000})},
		{name: "read acquire/ended lease dropped", script: script.ReadAcquire, keys: rkeys, args: []string{secret, ttl, quiet}, setup: []preset{str(pk, script.ReadersMark, 5000), zset(readers, 5000, map[string]int64{other: -1000, "third-reader-secret-22222": 5000})}},
		{name: "guarded read acquire/guard passed", script: script.GuardedReadAcquire, keys: append(slices.Clone(rkeys), script.GuardKey(pk)), args: []string{secret, ttl, window, quiet}, setup: []preset{guardAt(-hour)}},
		{name: "guarded read acquire/guard ahead", script: script.GuardedReadAcquire, keys: append(slices.Clone(rkeys), script.GuardKey(pk)), args: []string{secret, ttl, window, quiet}, setup: []preset{guardAt(hour)}},

		// ReadExtend: KEYS the lock key, readers; ARGV secret, TTL.
		{name: "read extend/reader in", script: script.ReadExtend, keys: rkeys[:2], args: []string{secret, ttl}, setup: readersIn(map[string]int64{secret: 5000, other: 3000})},
		{name: "read extend/lease ended", script: script.ReadExtend, keys: rkeys[:2], args: []string{secret, ttl}, setup: []preset{str(pk, script.ReadersMark, 5000), zset(readers, 5000, map[string]int64{secret: -1000, other: 5000})}},
		{name: "read extend/not in", script: script.ReadExtend, keys: rkeys[:2], args: []string{secret, ttl}, setup: readersIn(map[string]int64{other: 5000})},
		{name: "read extend/writer holds", script: script.ReadExtend, keys: rkeys[:2], args: []string{secret, ttl}, setup: []preset{held(pk, other)}},

		// ReadRelease: KEYS the lock key, readers, the lock key's line;
		// ARGV secret, reservation (ms), flag.
		{name: "read release/last reader", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: readersIn(map[string]int64{secret: 5000})},
		{name: "read release/last reader, listeners marked", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: append(readersIn(map[string]int64{secret: 5000}), str(script.ListenKey(pk), "1", 5000))},
		{name: "read release/last reader, quiet", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, quiet}, setup: readersIn(map[string]int64{secret: 5000})},
		{name: "read release/one of two", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: readersIn(map[string]int64{secret: 9000, other: 5000})},
		{name: "read release/not in", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: readersIn(map[string]int64{other: 5000})},
		{name: "read release/writer holds", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: []preset{held(pk, other)}},
		{name: "read release/last reader hands on to the writer in line", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: append(readersIn(map[string]int64{secret: 5000}), lineOf(pk, spot{w1, 1, 3000}, spot{w2, 2, 3000})...)},
		{name: "read release/last reader, sharded, hands on", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, sharded}, setup: append(readersIn(map[string]int64{secret: 5000}), lineOf(pk, spot{w2, 1, 3000})...)},
		{name: "read release/last reader, the writer's place ended", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: append(readersIn(map[string]int64{secret: 5000}), lineOf(pk, spot{w1, 1, -1000})...)},
		{name: "read release/last reader, quiet, a writer in line", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, quiet}, setup: append(readersIn(map[string]int64{secret: 5000}), lineOf(pk, spot{w1, 1, 3000})...)},
		{name: "read release/one of two, a writer in line", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: append(readersIn(map[string]int64{secret: 9000, other: 5000}), lineOf(pk, spot{w1, 1, 3000})...)},
		{name: "read release/last reader's lease ended, a writer in line", script: script.ReadRelease, keys: rrkeys, args: []string{other, reserve, loud}, setup: append([]preset{str(pk, script.ReadersMark, 5000), zset(readers, 5000, map[string]int64{secret: -1000, other: 5000})}, lineOf(pk, spot{w1, 1, 3000})...)},
		{name: "read release/last reader, hands on past a waiter without an end", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: append(readersIn(map[string]int64{secret: 5000}), lineOrphans(pk, map[string]int64{ghost: 1}, spot{w2, 2, 3000})...)},
		{name: "read release/reserved for a writer", script: script.ReadRelease, keys: rrkeys, args: []string{secret, reserve, loud}, setup: append([]preset{reservedFor(w1)}, lineOf(pk, spot{w2, 1, 3000})...)},

		// PermitAcquire: KEYS the permits; ARGV secret, TTL, limit, flag.
		{name: "permit acquire/fresh", script: script.PermitAcquire, keys: []string{permits}, args: []string{secret, ttl, "2", quiet}},
		{name: "permit acquire/room left", script: script.PermitAcquire, keys: []string{permits}, args: []string{secret, ttl, "2", quiet}, setup: []preset{zset(permits, 20000, map[string]int64{other: 20000})}},
		{name: "permit acquire/full", script: script.PermitAcquire, keys: []string{permits}, args: []string{secret, ttl, "2", quiet}, setup: []preset{zset(permits, 5000, map[string]int64{other: 5000, "third-holder-secret-22222": 4000})}},
		{name: "permit acquire/full, one ended", script: script.PermitAcquire, keys: []string{permits}, args: []string{secret, ttl, "2", quiet}, setup: []preset{zset(permits, 5000, map[string]int64{other: 5000, "third-holder-secret-22222": -1000})}},
		{name: "permit acquire/full, held already", script: script.PermitAcquire, keys: []string{permits}, args: []string{secret, ttl, "2", quiet}, setup: []preset{zset(permits, 5000, map[string]int64{other: 5000, secret: 4000})}},
		{name: "guarded permit acquire/guard passed", script: script.GuardedPermitAcquire, keys: []string{permits, script.GuardKey(pk)}, args: []string{secret, ttl, window, "2", quiet}, setup: []preset{guardAt(-hour)}},
		{name: "guarded permit acquire/guard ahead", script: script.GuardedPermitAcquire, keys: []string{permits, script.GuardKey(pk)}, args: []string{secret, ttl, window, "2", quiet}, setup: []preset{guardAt(hour)}},

		// PermitExtend: KEYS the permits; ARGV secret, TTL.
		{name: "permit extend/held", script: script.PermitExtend, keys: []string{permits}, args: []string{secret, ttl}, setup: []preset{zset(permits, 5000, map[string]int64{secret: 5000, other: 3000})}},
		{name: "permit extend/ended", script: script.PermitExtend, keys: []string{permits}, args: []string{secret, ttl}, setup: []preset{zset(permits, 5000, map[string]int64{secret: -1000, other: 5000})}},
		{name: "permit extend/absent", script: script.PermitExtend, keys: []string{permits}, args: []string{secret, ttl}},

		// PermitRelease: KEYS the permits; ARGV secret, flag.
		{name: "permit release/last", script: script.PermitRelease, keys: []string{permits}, args: []string{secret, loud}, setup: []preset{zset(permits, 5000, map[string]int64{secret: 5000})}},
		{name: "permit release/one of two", script: script.PermitRelease, keys: []string{permits}, args: []string{secret, loud}, setup: []preset{zset(permits, 9000, map[string]int64{secret: 9000, other: 5000})}},
		{name: "permit release/not held", script: script.PermitRelease, keys: []string{permits}, args: []string{secret, loud}, setup: []preset{zset(permits, 5000, map[string]int64{other: 5000})}},
	}
}
