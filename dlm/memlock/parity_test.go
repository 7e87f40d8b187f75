package memlock

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// The keys of the parity cases: two lock keys, and the keys beside them.
const (
	pk      = "lock{k}"
	pk2     = "lock{k}:2"
	permits = pk + script.PermitsSuffix
	readers = pk + script.ReadersSuffix
	secret  = "s3cr3t-of-the-holder-0000"
	other   = "another-holder-secret-111"
	ttl     = "10000"            // ms, the TTL of every grant
	window  = "30000"            // ms, the restart guard's window
	fx      = "20000"            // ms, the fencing counters' expiry
	hour    = int64(3600 * 1000) // ms
	endMark = "end-of-case"
)

// parityKeys are the keys whose state every case compares.
var parityKeys = []string{
	pk, script.FenceKey(pk), script.GuardKey(pk), readers, script.IntentKey(pk), permits,
	pk2, script.FenceKey(pk2),
}

// parityChannels are the wake channels every case listens on.
var parityChannels = []string{script.WakeChannel(pk), script.WakeChannel(pk2), script.WakeChannel(permits)}

// preset is a key a case sets before running its script, on both nodes.
type preset struct {
	key string
	val string // a string key's value
	// at makes the value the node's clock in ms plus at, when not 0.
	at int64
	// zset makes the key a sorted set: members and their scores, in ms from
	// now.
	zset    map[string]int64
	ttl     int64 // ms; 0 for none
	expired bool  // the key expires (1 ms) before the script runs
}

// parityCase runs one script with keys and args on both nodes.
type parityCase struct {
	name   string
	script *driver.Script
	keys   []string
	args   []string
	setup  []preset
	// near lists the indices of an array reply that are PTTLs.
	near []int
	// clock marks a case whose reply and fencing counters read the node's
	// clock in µs.
	clock bool
	// id marks the server-id script, whose reply is each server's own.
	id bool
}

func str(key, val string, ttl int64) preset { return preset{key: key, val: val, ttl: ttl} }

func zset(key string, ttl int64, members map[string]int64) preset {
	return preset{key: key, zset: members, ttl: ttl}
}

// guardAt is a guard key holding the node's time plus at ms.
func guardAt(at int64) preset { return preset{key: script.GuardKey(pk), at: at} }

// readersIn is the read lock held by the readers of members.
func readersIn(members map[string]int64) []preset {
	top := int64(1)
	for _, end := range members {
		top = max(top, end)
	}
	return []preset{str(pk, script.ReadersMark, top), zset(readers, top, members)}
}

func parityCases() []parityCase {
	fenced := []string{pk, script.FenceKey(pk)}
	guarded := []string{pk, script.GuardKey(pk)}
	rkeys := []string{pk, readers, script.IntentKey(pk)}
	loud, quiet, waits := script.Flag{Mode: script.Loud}.Arg(), script.Flag{}.Arg(), script.Flag{Mode: script.Loud, WriterWaits: true}.Arg()
	held := func(k, v string) preset { return str(k, v, 5000) }
	intent := str(script.IntentKey(pk), "1", 5000)
	// leaderMax is the bound of a leader's key: a secret, ':' and the
	// longest leader value.
	leaderMax := []string{strconv.Itoa(len(secret) + 1 + dlm.MaxLeaderValueLen)}
	return []parityCase{
		// Acquire: KEYS the lock keys; ARGV secret, TTL, flag.
		{name: "acquire/fresh key", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, loud}},
		{name: "acquire/fresh key, quiet", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, quiet}},
		{name: "acquire/held by same token", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, loud}, setup: []preset{held(pk, secret)}},
		{name: "acquire/held by other token", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, loud}, setup: []preset{held(pk, other)}},
		{name: "acquire/held without TTL", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, loud}, setup: []preset{str(pk, other, 0)}},
		{name: "acquire/expired", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, loud}, setup: []preset{{key: pk, val: other, expired: true}}},
		{name: "acquire/readers, writer waits", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, waits}, setup: readersIn(map[string]int64{other: 5000})},
		{name: "acquire/readers, writer does not wait", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, loud}, setup: readersIn(map[string]int64{other: 5000})},
		{name: "acquire/intent present", script: script.Acquire, keys: []string{pk}, args: []string{secret, ttl, loud}, setup: []preset{intent}},
		{name: "acquire/forged readers mark", script: script.Acquire, keys: []string{pk}, args: []string{script.ReadersMark, ttl, loud}, setup: []preset{str(pk, script.ReadersMark, 5000)}},
		{name: "acquire/two keys free", script: script.Acquire, keys: []string{pk, pk2}, args: []string{secret, ttl, loud}},
		{name: "acquire/two keys, second held", script: script.Acquire, keys: []string{pk, pk2}, args: []string{secret, ttl, loud}, setup: []preset{held(pk2, other)}},

		// FencedAcquire: KEYS locks then counters; ARGV secret, TTL, expiry, flag.
		{name: "fenced acquire/fresh", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, "0", loud}},
		{name: "fenced acquire/counter present", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, "0", loud}, setup: []preset{str(script.FenceKey(pk), "41", 0)}},
		{name: "fenced acquire/held by other token", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, "0", loud}, setup: []preset{held(pk, other), str(script.FenceKey(pk), "41", 0)}},
		{name: "fenced acquire/held by same token", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, "0", loud}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "41", 0)}},
		{name: "fenced acquire/expiry, fresh", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, fx, loud}, clock: true},
		{name: "fenced acquire/expiry, counter present", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, fx, loud}, setup: []preset{str(script.FenceKey(pk), "7", 5000)}},
		{name: "fenced acquire/expiry, counter expired", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, fx, loud}, setup: []preset{{key: script.FenceKey(pk), val: "7", expired: true}}, clock: true},
		{name: "fenced acquire/two keys, counters apart", script: script.FencedAcquire, keys: []string{pk, pk2, script.FenceKey(pk), script.FenceKey(pk2)}, args: []string{secret, ttl, "0", loud}, setup: []preset{str(script.FenceKey(pk), "3", 0), str(script.FenceKey(pk2), "9", 0)}},
		{name: "fenced acquire/readers, writer waits", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, "0", waits}, setup: readersIn(map[string]int64{other: 5000})},
		{name: "fenced acquire/intent present", script: script.FencedAcquire, keys: fenced, args: []string{secret, ttl, "0", quiet}, setup: []preset{intent}},

		// GuardedAcquire: KEYS locks then the guard; ARGV secret, TTL, window, flag.
		{name: "guarded acquire/guard passed", script: script.GuardedAcquire, keys: guarded, args: []string{secret, ttl, window, loud}, setup: []preset{guardAt(-hour)}},
		{name: "guarded acquire/guard passed, held by other", script: script.GuardedAcquire, keys: guarded, args: []string{secret, ttl, window, loud}, setup: []preset{guardAt(-hour), held(pk, other)}},
		{name: "guarded acquire/guard ahead", script: script.GuardedAcquire, keys: guarded, args: []string{secret, ttl, window, loud}, setup: []preset{guardAt(hour)}},
		{name: "guarded acquire/guard ahead, held by same", script: script.GuardedAcquire, keys: guarded, args: []string{secret, ttl, window, loud}, setup: []preset{guardAt(hour), held(pk, secret)}},

		// GuardedFencedAcquire: ARGV secret, TTL, expiry, window, flag.
		{name: "guarded fenced acquire/guard passed", script: script.GuardedFencedAcquire, keys: append(slices.Clone(fenced), script.GuardKey(pk)), args: []string{secret, ttl, "0", window, loud}, setup: []preset{guardAt(-hour), str(script.FenceKey(pk), "5", 0)}},
		{name: "guarded fenced acquire/guard passed, expiry", script: script.GuardedFencedAcquire, keys: append(slices.Clone(fenced), script.GuardKey(pk)), args: []string{secret, ttl, fx, window, loud}, setup: []preset{guardAt(-hour), str(script.FenceKey(pk), "5", 0)}},
		{name: "guarded fenced acquire/guard ahead", script: script.GuardedFencedAcquire, keys: append(slices.Clone(fenced), script.GuardKey(pk)), args: []string{secret, ttl, "0", window, loud}, setup: []preset{guardAt(hour), str(script.FenceKey(pk), "5", 0)}},

		// Release: KEYS the lock keys; ARGV secret, flag.
		{name: "release/held by same token", script: script.Release, keys: []string{pk}, args: []string{secret, loud}, setup: []preset{held(pk, secret)}},
		{name: "release/held by same token, quiet", script: script.Release, keys: []string{pk}, args: []string{secret, quiet}, setup: []preset{held(pk, secret)}},
		{name: "release/held by other token", script: script.Release, keys: []string{pk}, args: []string{secret, loud}, setup: []preset{held(pk, other)}},
		{name: "release/absent", script: script.Release, keys: []string{pk}, args: []string{secret, loud}},
		{name: "release/expired", script: script.Release, keys: []string{pk}, args: []string{secret, loud}, setup: []preset{{key: pk, val: secret, expired: true}}},
		{name: "release/intent present", script: script.Release, keys: []string{pk}, args: []string{secret, loud}, setup: []preset{held(pk, secret), intent}},
		{name: "release/intent present, writer waits on", script: script.Release, keys: []string{pk}, args: []string{secret, waits}, setup: []preset{held(pk, secret), intent}},
		{name: "release/intent present, held by other, writer waits on", script: script.Release, keys: []string{pk}, args: []string{secret, waits}, setup: []preset{held(pk, other), intent}},
		{name: "release/two keys, one another's", script: script.Release, keys: []string{pk, pk2}, args: []string{secret, loud}, setup: []preset{held(pk, secret), held(pk2, other)}},
		{name: "release/forged readers mark", script: script.Release, keys: []string{pk}, args: []string{script.ReadersMark, loud}, setup: readersIn(map[string]int64{other: 5000})},

		// Extend: KEYS the lock keys; ARGV secret, TTL.
		{name: "extend/held by same token", script: script.Extend, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{held(pk, secret)}},
		{name: "extend/held by other token", script: script.Extend, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{held(pk, other)}},
		{name: "extend/absent", script: script.Extend, keys: []string{pk}, args: []string{secret, ttl}},
		{name: "extend/expired", script: script.Extend, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{{key: pk, val: secret, expired: true}}},
		{name: "extend/two keys, second lost", script: script.Extend, keys: []string{pk, pk2}, args: []string{secret, ttl}, setup: []preset{held(pk, secret)}},
		{name: "extend/forged readers mark", script: script.Extend, keys: []string{pk}, args: []string{script.ReadersMark, ttl}, setup: readersIn(map[string]int64{other: 5000})},

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
		{name: "extend batch/forged readers mark", script: script.ExtendBatch, keys: []string{pk, pk, readers},
			args:  []string{script.BatchLock(1), ttl, "1", script.ReadersMark, script.BatchRead, ttl, "1", other},
			setup: readersIn(map[string]int64{other: 5000})},
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
		{name: "read fence/forged readers mark", script: script.ReadFence, keys: fenced, args: []string{script.ReadersMark}, setup: append(readersIn(map[string]int64{other: 5000}), str(script.FenceKey(pk), "5", 0))},

		// Status: KEYS the lock key, its counter.
		{name: "status/absent", script: script.Status, keys: fenced, near: []int{0}},
		{name: "status/held, fenced", script: script.Status, keys: fenced, near: []int{0}, setup: []preset{held(pk, secret), str(script.FenceKey(pk), "5", 0)}},
		{name: "status/held without TTL", script: script.Status, keys: fenced, near: []int{0}, setup: []preset{str(pk, secret, 0)}},

		// Leader: KEYS the election's lock key; ARGV the longest value read.
		{name: "leader/absent", script: script.Leader, keys: []string{pk}, args: leaderMax},
		{name: "leader/held with a value", script: script.Leader, keys: []string{pk}, args: leaderMax, near: []int{2}, setup: []preset{held(pk, secret+":10.0.0.1:80")}},
		{name: "leader/held without a value", script: script.Leader, keys: []string{pk}, args: leaderMax, near: []int{2}, setup: []preset{held(pk, secret)}},
		{name: "leader/held without TTL", script: script.Leader, keys: []string{pk}, args: leaderMax, near: []int{2}, setup: []preset{str(pk, secret+":", 0)}},
		{name: "leader/value of the longest size", script: script.Leader, keys: []string{pk}, args: leaderMax, near: []int{2}, setup: []preset{held(pk, secret+":"+strings.Repeat("v", dlm.MaxLeaderValueLen))}},
		{name: "leader/oversized value", script: script.Leader, keys: []string{pk}, args: leaderMax, setup: []preset{held(pk, secret+":"+strings.Repeat("v", dlm.MaxLeaderValueLen+1))}},
		{name: "leader/oversized value without TTL", script: script.Leader, keys: []string{pk}, args: leaderMax, setup: []preset{str(pk, strings.Repeat("v", 1<<20), 0)}},

		// ServerID.
		{name: "server id", script: script.ServerID, id: true},

		// ServerProbe: KEYS the probe key; ARGV the value, its TTL.
		{name: "server probe/absent", script: script.ServerProbe, keys: []string{pk}, args: []string{secret, ttl}},
		{name: "server probe/present", script: script.ServerProbe, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{held(pk, other)}},
		{name: "server probe/expired", script: script.ServerProbe, keys: []string{pk}, args: []string{secret, ttl}, setup: []preset{{key: pk, val: other, expired: true}}},

		// ReadAcquire: KEYS the lock key, readers, intent; ARGV secret, TTL, flag.
		{name: "read acquire/fresh", script: script.ReadAcquire, keys: rkeys, args: []string{secret, ttl, quiet}},
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

		// ReadRelease: KEYS the lock key, readers; ARGV secret, flag.
		{name: "read release/last reader", script: script.ReadRelease, keys: rkeys[:2], args: []string{secret, loud}, setup: readersIn(map[string]int64{secret: 5000})},
		{name: "read release/one of two", script: script.ReadRelease, keys: rkeys[:2], args: []string{secret, loud}, setup: readersIn(map[string]int64{secret: 9000, other: 5000})},
		{name: "read release/not in", script: script.ReadRelease, keys: rkeys[:2], args: []string{secret, loud}, setup: readersIn(map[string]int64{other: 5000})},
		{name: "read release/writer holds", script: script.ReadRelease, keys: rkeys[:2], args: []string{secret, loud}, setup: []preset{held(pk, other)}},

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

// keyState is what a node holds at a key.
type keyState struct {
	exists bool
	val    string           // a string's value
	zset   map[string]int64 // a sorted set's members and scores, nil for a string
	pttl   int64
}

func (k keyState) String() string {
	switch {
	case !k.exists:
		return "absent"
	case k.zset != nil:
		return fmt.Sprintf("zset %v, PTTL %d", k.zset, k.pttl)
	}
	return fmt.Sprintf("%q, PTTL %d", k.val, k.pttl)
}

// parityNode is one side of the comparison.
type parityNode struct {
	node  driver.Node
	set   func(t *testing.T, p preset, now int64)
	state func(t *testing.T, key string) keyState
	flush func(t *testing.T)
	// mark publishes endMark on channel.
	mark  func(t *testing.T, channel string)
	heard *heard
}

// heard collects what a subscription hears.
type heard struct {
	mu   sync.Mutex
	msgs []string
	subs chan string
	ends chan string
}

func newHeard() *heard { return &heard{subs: make(chan string, 16), ends: make(chan string, 16)} }

func (h *heard) Message(channel, payload string) {
	if payload == endMark {
		h.ends <- channel
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, channel+" "+payload)
}

func (h *heard) Subscribed(channel string) { h.subs <- channel }

// take waits for n values from c.
func take(t *testing.T, c <-chan string, n int, what string) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for range n {
		select {
		case <-c:
		case <-timeout.C:
			t.Fatalf("no %s within 10s", what)
		}
	}
}

// listen subscribes p to the wake channels.
func (p *parityNode) listen(t *testing.T) {
	p.heard = newHeard()
	sub, err := p.node.(driver.Subscriber).Subscribe(context.Background(), p.heard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	if err := sub.Subscribe(context.Background(), parityChannels...); err != nil {
		t.Fatal(err)
	}
	take(t, p.heard.subs, len(parityChannels), "subscription confirmation")
}

// published returns what p heard since the last call, once the end marks
// published after the script came back.
func (p *parityNode) published(t *testing.T) []string {
	for _, ch := range parityChannels {
		p.mark(t, ch)
	}
	take(t, p.heard.ends, len(parityChannels), "end mark")
	p.heard.mu.Lock()
	defer p.heard.mu.Unlock()
	msgs := p.heard.msgs
	p.heard.msgs = nil
	slices.Sort(msgs)
	return msgs
}

func redisParityNode(t *testing.T) *parityNode {
	srv := redistest.StartServer(t)
	do := func(t *testing.T, args ...string) any {
		t.Helper()
		v, err := srv.Do(args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	cfg, err := driver.ParseURL("redis://" + srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	n := resp.NewNode(cfg)
	t.Cleanup(func() { n.Close() })
	return &parityNode{
		node: n,
		set: func(t *testing.T, p preset, now int64) {
			if p.zset != nil {
				for m, at := range p.zset {
					do(t, "ZADD", p.key, strconv.FormatInt(now+at, 10), m)
				}
				if p.ttl > 0 {
					do(t, "PEXPIRE", p.key, strconv.FormatInt(p.ttl, 10))
				}
				return
			}
			args := []string{"SET", p.key, p.value(now)}
			if p.ttl > 0 {
				args = append(args, "PX", strconv.FormatInt(p.ttl, 10))
			}
			do(t, args...)
		},
		state: func(t *testing.T, key string) keyState {
			var k keyState
			switch typ := do(t, "TYPE", key); typ {
			case "none":
				return k
			case "string":
				k.val, _ = do(t, "GET", key).(string)
			case "zset":
				k.zset = map[string]int64{}
				flat, _ := do(t, "ZRANGE", key, "0", "-1", "WITHSCORES").([]any)
				for i := 0; i+1 < len(flat); i += 2 {
					m, _ := flat[i].(string)
					s, _ := flat[i+1].(string)
					score, err := strconv.ParseInt(s, 10, 64)
					if err != nil {
						t.Fatalf("ZRANGE %s: score %q: %v", key, s, err)
					}
					k.zset[m] = score
				}
			default:
				t.Fatalf("TYPE %s = %v; want none, string or zset", key, typ)
			}
			k.exists = true
			k.pttl, _ = do(t, "PTTL", key).(int64)
			return k
		},
		flush: func(t *testing.T) { do(t, "FLUSHALL") },
		mark:  func(t *testing.T, ch string) { do(t, "PUBLISH", ch, endMark) },
	}
}

func memParityNode(*testing.T) *parityNode {
	n := NewNode("memlock:parity")
	return &parityNode{
		node: n,
		set: func(_ *testing.T, p preset, now int64) {
			n.mu.Lock()
			defer n.mu.Unlock()
			e := entry{val: p.value(now)}
			if p.zset != nil {
				e = entry{set: map[string]int64{}}
				for m, at := range p.zset {
					e.set[m] = now + at
				}
			}
			if p.ttl > 0 {
				e.exp = time.Now().Add(time.Duration(p.ttl) * time.Millisecond)
			}
			n.keys[p.key] = e
		},
		state: func(_ *testing.T, key string) keyState {
			n.mu.Lock()
			defer n.mu.Unlock()
			v, ok := n.get(key)
			if !ok {
				return keyState{}
			}
			k := keyState{exists: true, val: v, pttl: n.pttl(key)}
			if s := n.keys[key].set; s != nil {
				k.val, k.zset = "", maps.Clone(s)
			}
			return k
		},
		flush: func(*testing.T) { n.FlushAll() },
		mark: func(_ *testing.T, ch string) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.publish(ch, endMark)
		},
	}
}

// value is a string preset's value at the node time now (ms).
func (p preset) value(now int64) string {
	if p.at != 0 {
		return strconv.FormatInt(now+p.at, 10)
	}
	return p.val
}

// TestScriptParity runs every script the in-memory node runs, through cases
// that reach each of its branches, on a memlock Node and on a
// redis-server side by side, and requires the same replies, the same
// state of every key afterwards (value, sorted-set scores, whether it has a
// TTL and about how long) and the same messages published on the wake
// channels. Values read from the clock (PTTLs, scores, counters started from
// the clock) may differ by the time the case took from the first script's
// start to the last read.
func TestScriptParity(t *testing.T) {
	t.Parallel()
	sides := []*parityNode{redisParityNode(t), memParityNode(t)}
	for _, p := range sides {
		p.listen(t)
	}
	covered := map[*driver.Script]bool{}
	for _, tc := range parityCases() {
		covered[tc.script] = true
		t.Run(tc.name, func(t *testing.T) {
			// Every TTL and score was set, and read, within the time since
			// start: values read from the clock differ by no more than that.
			start := time.Now()
			now := start.UnixMilli()
			for _, p := range sides {
				p.flush(t)
				for _, s := range tc.setup {
					if s.expired {
						s.ttl = 1
					}
					p.set(t, s, now)
				}
			}
			if slices.ContainsFunc(tc.setup, func(p preset) bool { return p.expired }) {
				time.Sleep(5 * time.Millisecond) // the 1 ms TTLs run out
			}
			var replies [2]any
			var errs [2]error
			for i, p := range sides {
				replies[i], errs[i] = p.node.Eval(context.Background(), tc.script, tc.keys, tc.args)
			}
			var states [2][]keyState
			for i, p := range sides {
				for _, k := range parityKeys {
					states[i] = append(states[i], p.state(t, k))
				}
			}
			tol := time.Since(start).Milliseconds() + 2
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("Eval: redis %v, memlock %v; want both nil", errs[0], errs[1])
			}
			if msg := compareReply(tc, replies[0], replies[1], tol); msg != "" {
				t.Errorf("reply: redis %#v, memlock %#v: %s", replies[0], replies[1], msg)
			}
			for j, k := range parityKeys {
				clock := tc.clock && (k == script.FenceKey(pk) || k == script.FenceKey(pk2))
				if msg := compareKey(states[0][j], states[1][j], tol, clock); msg != "" {
					t.Errorf("key %s: redis %v, memlock %v: %s", k, states[0][j], states[1][j], msg)
				}
			}
			if r, m := sides[0].published(t), sides[1].published(t); !slices.Equal(r, m) {
				t.Errorf("published: redis %q, memlock %q; want the same", r, m)
			}
		})
	}
	for _, s := range memlockScripts {
		if !covered[s] {
			t.Errorf("script %s, which memlock runs, has no parity case", s.Hash)
		}
	}
}

// memlockScripts are the scripts the in-memory node runs.
var memlockScripts = []*driver.Script{
	script.Acquire, script.FencedAcquire, script.GuardedAcquire, script.GuardedFencedAcquire,
	script.Release, script.Extend, script.RaiseFence, script.ReadFence, script.Status, script.Leader, script.ServerID, script.ServerProbe,
	script.ReadAcquire, script.GuardedReadAcquire, script.ReadExtend, script.ReadRelease,
	script.PermitAcquire, script.GuardedPermitAcquire, script.PermitExtend, script.PermitRelease,
	script.ExtendBatch,
}

var serverID = regexp.MustCompile(`^[0-9a-f]{40}$`)

// compareReply returns why replies r (Redis) and m (memlock) differ, or "".
func compareReply(tc parityCase, r, m any, tol int64) string {
	switch {
	case tc.id:
		rs, _ := r.(string)
		ms, _ := m.(string)
		if !serverID.MatchString(rs) || !serverID.MatchString(ms) {
			return "want two run_ids of 40 hexadecimal digits"
		}
		return ""
	case tc.clock:
		rn, _ := r.(int64)
		mn, _ := m.(int64)
		if rn <= 0 || mn <= 0 || abs(rn-mn) > tol*1000 {
			return fmt.Sprintf("want two clock readings in µs within %d ms", tol)
		}
		return ""
	}
	ra, rok := r.([]any)
	ma, mok := m.([]any)
	if !rok || !mok {
		if r != m {
			return "want the same"
		}
		return ""
	}
	if len(ra) != len(ma) {
		return "want arrays of one length"
	}
	for i := range ra {
		if slices.Contains(tc.near, i) {
			if msg := comparePTTL(ra[i].(int64), ma[i].(int64), tol); msg != "" {
				return fmt.Sprintf("element %d: %s", i, msg)
			}
			continue
		}
		if ra[i] != ma[i] {
			return fmt.Sprintf("element %d differs", i)
		}
	}
	return ""
}

// comparePTTL compares PTTLs: -2 and -1 exactly, TTLs to within tol ms.
func comparePTTL(r, m, tol int64) string {
	if (r < 0 || m < 0) && r != m || abs(r-m) > tol {
		return fmt.Sprintf("PTTL %d and %d; want the same to within %d ms", r, m, tol)
	}
	return ""
}

// compareKey returns why the states r (Redis) and m (memlock) of one key
// differ, or "". With clock, string values are µs readings of the clock.
func compareKey(r, m keyState, tol int64, clock bool) string {
	if r.exists != m.exists || (r.zset == nil) != (m.zset == nil) {
		return "want the same kind"
	}
	if msg := comparePTTL(r.pttl, m.pttl, tol); msg != "" {
		return msg
	}
	if r.zset != nil {
		if len(r.zset) != len(m.zset) {
			return "want the same members"
		}
		for member, score := range r.zset {
			ms, ok := m.zset[member]
			if !ok || abs(score-ms) > tol {
				return fmt.Sprintf("member %q: want the same score to within %d ms", member, tol)
			}
		}
		return ""
	}
	if clock && r.val != m.val {
		rn, err1 := strconv.ParseInt(r.val, 10, 64)
		mn, err2 := strconv.ParseInt(m.val, 10, 64)
		if err1 != nil || err2 != nil || abs(rn-mn) > tol*1000 {
			return fmt.Sprintf("want two clock readings in µs within %d ms", tol)
		}
		return ""
	}
	if r.val != m.val {
		return "want the same value"
	}
	return ""
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
