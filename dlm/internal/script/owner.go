package script

import (
	"strconv"

	"github.com/dlmgo/redlock/dlm/driver"
)

// A lock taken with a holder label (dlm.WithOwner) has, beside its key, an
// owner key ([OwnerKey]): the hex SHA-1 of the holder's secret, the node's
// time of the grant in ms, a space, then the label. The digest ties the
// label to the one holder that wrote it, as an election's leader key is
// tied ([SetLeader]): an owner key whose digest is not that of the lock
// key's value (left by an earlier holder, whose release does not delete
// it) names no owner. The owner key lives with the lock: [SetOwner] gives
// it the lock key's TTL, auto-extension extends it with the lock key
// ([BatchLeader]'s entries), [TouchOwner] after an Extend, and it expires on
// its own at most a TTL after the lock ended. None of these scripts runs
// for a lock without a label: the default path knows nothing of them.

// OwnerSuffix names a lock key's owner key.
const OwnerSuffix = ":owner"

// OwnerKey returns the owner key of lock key k.
func OwnerKey(k string) string { return k + OwnerSuffix }

// MaxOwnerValue bounds the owner key's value that [StatusOwner] and [List]
// read: a longer one (written by hand) names no owner.
const MaxOwnerValue = 512

var maxOwnerValueLua = strconv.Itoa(MaxOwnerValue)

// SetOwner stores the holder's label beside the lock key, if the key holds
// the holder's secret, with the key's TTL and the node's time as the
// grant's. Otherwise it changes nothing.
//
// KEYS: the lock key, its owner key. ARGV: the secret, the label. Reply: 1
// when stored, 0 otherwise.
var SetOwner = driver.NewScript(owns + `
if not owns(redis.call('GET', KEYS[1])) then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[2], redis.sha1hex(ARGV[1]) .. now .. ' ' .. ARGV[2], 'PX', ttl)
return 1
`)

// TouchOwner gives the owner key the lock key's TTL, if the lock key holds
// the holder's secret: after an Extend of a labelled lock.
//
// KEYS: the lock key, its owner key. ARGV: the secret. Reply: 1 when
// extended, 0 otherwise.
var TouchOwner = driver.NewScript(owns + `
if not owns(redis.call('GET', KEYS[1])) then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
return redis.call('PEXPIRE', KEYS[2], ttl)
`)

// ownerOf defines ownerOf(k, v): the owner key of lock key k's value v as
// the grant time (ms) and the label, or 0 and an empty label when it names
// no owner of v. It needs no command beyond STRLEN and GET, which the
// least-privilege ACL rules grant: a key of another type is found by
// STRLEN's error.
var ownerOf = `
local function ownerOf(k, v)
  local ok = k .. '` + OwnerSuffix + `'
  if not v then return 0, '' end
  local n = redis.pcall('STRLEN', ok) -- an error reply for a key of another type
  if type(n) ~= 'number' or n == 0 or n > ` + maxOwnerValueLua + ` then return 0, '' end
  local o = redis.call('GET', ok)
  if string.sub(o, 1, ` + leaderDigestLenLua + `) ~= redis.sha1hex(v) then return 0, '' end
  local rest = string.sub(o, ` + strconv.Itoa(LeaderDigestLen+1) + `)
  local sp = string.find(rest, ' ', 1, true)
  if not sp then return 0, '' end
  return tonumber(string.sub(rest, 1, sp - 1)) or 0, string.sub(rest, sp + 1)
end
`

// StatusOwner is [Status] with the holder's label: what a node knows of
// one lock key, without revealing the holder's secret. The lock key's
// value is hashed only when it is no longer than [MaxOwnerValue] bytes.
//
// KEYS: the lock key, its fencing counter. ARGV: none. Reply: {PTTL of the
// key (-2 when absent), the counter or 0, 1 when the key is reserved for a
// waiter, else 0, the grant time (ms, node's clock) or 0, the label or ”}.
var StatusOwner = driver.NewScript(ownerOf + `
local v = redis.call('GET', KEYS[1])
local reserved = 0
if v and string.sub(v, 1, ` + strconv.Itoa(len(nextPrefix)) + `) == '` + nextPrefix + `' then reserved = 1 end
local since, label = 0, ''
if v and reserved == 0 and #v <= ` + maxOwnerValueLua + ` then since, label = ownerOf(KEYS[1], v) end
return {redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0'), reserved, since, label}
`)
