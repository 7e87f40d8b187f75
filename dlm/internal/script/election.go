package script

import (
	"strconv"

	"github.com/dlmgo/redlock/dlm/driver"
)

// An election is a lock whose key holds the leader's secret, like any lock;
// the leader's value is data beside it, in the key's leader key
// ([LeaderKey]): the hex SHA-1 of the leader's secret, then the value. The
// digest ties the value to the one holder that wrote it: a leader key whose
// digest is not that of the lock key's value (left by an earlier leader,
// or written by hand) names no value.
//
// The leader key lives with the leadership: [SetLeader] gives it the lock
// key's TTL, the leadership's extensions ([BatchLeader]) extend it with the
// lock key, and it expires on its own at most a TTL after the leadership
// ended.

// LeaderSuffix names an election's leader key, beside its lock key.
const LeaderSuffix = ":leader"

// LeaderKey returns the leader key of the election whose lock key is k.
func LeaderKey(k string) string { return k + LeaderSuffix }

// LeaderDigestLen is the length of the digest that begins a leader key: a
// SHA-1 in hex.
const LeaderDigestLen = 40

// leaderDigestLenLua is LeaderDigestLen as the scripts write it.
var leaderDigestLenLua = strconv.Itoa(LeaderDigestLen)

// SetLeader stores a leader's value beside the election's lock key, if the
// key holds the leader's secret, with the key's TTL, and announces the
// grant ([WakeGrant]) on the key's broadcast channel for the observers.
// Otherwise it changes nothing.
//
// KEYS: the lock key, its leader key. ARGV: the secret, the value,
// announce's flag. Reply: 1 when stored, 0 otherwise.
var SetLeader = driver.NewScript(announce + owns + `
if not owns(redis.call('GET', KEYS[1])) then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
redis.call('SET', KEYS[2], redis.sha1hex(ARGV[1]) .. ARGV[2], 'PX', ttl)
broadcast(KEYS[1], '` + WakeGrant + `')
return 1
`)

// Leader reads an election without revealing the leader's secret: the
// digest of the lock key's value tells holders apart, and the leader key
// gives the value the holder stored.
//
// Both keys are untrusted: anyone who may write under the key prefix can
// store values of any size there. Leader measures each (STRLEN) before it
// reads it, and never reads, hashes or returns a lock key's value longer
// than ARGV[1] bytes or a leader key's longer than ARGV[2], so that what a
// reply carries, and what each read costs the node and the observer, stays
// bounded whatever the keys hold.
//
// A lock key whose value has a ':' was written by a candidate of the
// previous release, whose secret carried ':' and the value: the value is
// read from it, so that observers upgraded first still see those leaders.
// (Secrets are URL-safe base64, which has no ':'.)
//
// KEYS: the lock key, its leader key. ARGV: the longest lock key's value
// read, the longest leader key's value read. Reply: an empty array when
// the lock key is absent, or holds no candidate's secret (a key a release
// handed on to the next candidate, [ReservedFor]): nobody leads there;
// {the lock key's length} when it is longer than ARGV[1]; otherwise the
// SHA-1 of the lock key's value in hex and its PTTL in ms, then the
// holder's value when it stored one, or the leader key's length (an
// integer) when that is longer than ARGV[2].
var Leader = driver.NewScript(`
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[1]) then return {n} end
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, ` + reservedPrefixLen + `) == '` + ReservedPrefix + `' then return {} end
local id, ttl = redis.sha1hex(v), redis.call('PTTL', KEYS[1])
local i = string.find(v, ':', 1, true)
if i then return {id, ttl, string.sub(v, i + 1)} end
local m = redis.call('STRLEN', KEYS[2])
if m > tonumber(ARGV[2]) then return {id, ttl, m} end
if m < ` + leaderDigestLenLua + ` then return {id, ttl} end
local s = redis.call('GET', KEYS[2])
if string.sub(s, 1, ` + leaderDigestLenLua + `) ~= id then return {id, ttl} end
return {id, ttl, string.sub(s, ` + leaderDigestLenLua + ` + 1)}
`)
