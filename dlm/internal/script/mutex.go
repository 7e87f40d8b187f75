package script

import "github.com/dlmgo/redlock/dlm/driver"

// owns defines owns(v): whether v, a lock key's value, is the holder's
// secret ARGV[1]. A reserved value ([ReadersMark]) is nobody's secret, even
// when ARGV[1] equals it: the marker is public, so a caller that passed it
// as its secret (from a forged handle) must get what any stranger gets.
// Every script that compares a lock key with ARGV[1] does it through owns.
const owns = `
local function owns(v)
  return v == ARGV[1] and v ~= '` + ReadersMark + `'
end
`

// keysPrelude starts a script whose KEYS are all lock keys (or lock keys
// and counters), as guardPrelude starts one whose last key is the guard's:
// nk counts them.
const keysPrelude = announce + `local nk = #KEYS
`

// Acquire sets every key to the secret with a TTL, if none is held under
// another secret. A key already holding this secret counts as free, so the
// script is safe to run twice. A grant announces [WakeGrant] and leaves a
// writer's intent in place, as SET NX does: the release deletes it, so that
// a waiting writer's attempt that a quorum refused keeps its intent where it
// was granted (see [Release]). A refusal by readers records a waiting
// writer's intent (see [Flag]).
//
// KEYS: the lock keys. ARGV: the secret, the TTL (ms), announce's flag.
// Reply: 1 when granted, 0 otherwise.
var Acquire = driver.NewScript(keysPrelude + acquireBody)

const acquireBody = owns + `
for i = 1, nk do
  local v = redis.call('GET', KEYS[i])
  if v and not owns(v) then
    readersHold(KEYS[i], v)
    return 0
  end
end
for i = 1, nk do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  announce(KEYS[i], '` + WakeGrant + `')
end
return 1
`

// Release deletes the keys that still hold the secret. It never touches
// another holder's key. For each key it deletes, it deletes a writer's
// intent, which the grant left in place, and announces the release on the
// key's wake channel, when anyone listens there, with the number of
// listeners: [WakeRelease] and "5". The release of a waiting writer's
// failed attempt (announce's flag with WriterWaits) keeps the intent: the
// writer still waits, and the nodes that granted its attempt must not let
// new readers in.
//
// KEYS: the lock keys. ARGV: the secret, announce's flag. Reply: the number
// of keys deleted.
var Release = driver.NewScript(announce + owns + waitsLua + `
local n = 0
for _, k in ipairs(KEYS) do
  if owns(redis.call('GET', k)) then
    n = n + redis.call('DEL', k)
    if not waits then clearIntent(k) end
    announce(k, nil)
  end
end
return n
`)

// Extend sets the TTL of every key if all still hold the secret; otherwise
// it changes nothing. It never recreates an expired key.
//
// KEYS: the lock keys. ARGV: the secret, the TTL (ms). Reply: 1 when
// extended, 0 otherwise.
var Extend = driver.NewScript(owns + `
for _, k in ipairs(KEYS) do
  if not owns(redis.call('GET', k)) then return 0 end
end
for _, k in ipairs(KEYS) do
  redis.call('PEXPIRE', k, ARGV[2])
end
return 1
`)

// FenceLimit bounds every fencing counter and token: the nodes count in
// Lua numbers, exact only below it, and a token must fit a JSON number. A
// counter a node reports at or above it was not written by these scripts.
const FenceLimit = 1 << 53

// fenceLimitLua is [FenceLimit] as the scripts write it.
const fenceLimitLua = "9007199254740992"

// The fenced scripts take the lock's keys as KEYS[1..n] and their fencing
// counters ([FenceKey]) as KEYS[n+1..2n] (see docs/fencing.md). The fenced
// acquire scripts take the counters' expiry in ms as ARGV[3]: "0", counters
// never expire; otherwise a grant sets each counter's TTL to it, and a
// missing counter starts from the node's clock in microseconds instead of
// 0.

// FencedAcquire is [Acquire] that also, when it takes the keys, sets every
// counter to one more than the largest of them.
//
// KEYS: the lock keys, then their counters. ARGV: the secret, the TTL
// (ms), the counters' expiry (ms, "0" for none), announce's flag. Reply:
// the new counter (at least 1) when granted, 0 otherwise.
var FencedAcquire = driver.NewScript(keysPrelude + fencedAcquireBody)

const fencedAcquireBody = owns + `
local n = nk / 2
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  if v and not owns(v) then
    readersHold(KEYS[i], v)
    return 0
  end
end
local fx = tonumber(ARGV[3])
local f = 0
for i = n + 1, 2 * n do
  local c = redis.call('GET', KEYS[i])
  if c then
    c = tonumber(c)
  elseif fx > 0 then
    local t = redis.call('TIME')
    c = tonumber(t[1]) * 1000000 + tonumber(t[2])
  else
    c = 0
  end
  if c > f then f = c end
end
f = f + 1
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  if fx > 0 then
    redis.call('SET', KEYS[n + i], f, 'PX', fx)
  else
    redis.call('SET', KEYS[n + i], f)
  end
  announce(KEYS[i], '` + WakeGrant + `')
end
return f
`

// RaiseFence raises every counter to at least ARGV[2] if all the lock keys
// still hold the secret ARGV[1]; otherwise it changes nothing. A counter
// raised keeps its TTL.
//
// KEYS: the lock keys, then their counters. ARGV: the secret, the token.
// Reply: 1 when the keys hold the secret, 0 otherwise.
var RaiseFence = driver.NewScript(owns + `
local n = #KEYS / 2
for i = 1, n do
  if not owns(redis.call('GET', KEYS[i])) then return 0 end
end
local f = tonumber(ARGV[2])
for i = n + 1, 2 * n do
  if tonumber(redis.call('GET', KEYS[i]) or '0') < f then
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl > 0 then
      redis.call('SET', KEYS[i], ARGV[2], 'PX', ttl)
    else
      redis.call('SET', KEYS[i], ARGV[2])
    end
  end
end
return 1
`)

// ReadFence reads the fencing counters of a lock whose keys all hold the
// secret ARGV[1], for a lock resumed from its handle: while the keys hold
// the secret, no grant of another holder can have changed the counters,
// so they are those the lock's grant left. It writes nothing. A counter is
// returned as the text the node holds, for the caller to parse with bounds:
// whatever the key holds is untrusted.
//
// KEYS: the lock keys, then their counters. ARGV: the secret. Reply: an
// empty array when a key does not hold the secret; otherwise the counters,
// one for each lock key, "0" for a missing one.
var ReadFence = driver.NewScript(owns + `
local n = #KEYS / 2
for i = 1, n do
  if not owns(redis.call('GET', KEYS[i])) then return {} end
end
local out = {}
for i = n + 1, 2 * n do
  out[#out + 1] = redis.call('GET', KEYS[i]) or '0'
end
return out
`)

// Status reports what a node knows of one lock key, without revealing the
// holder's secret.
//
// KEYS: the lock key, its fencing counter. ARGV: none. Reply: {PTTL of the
// key (-2 when absent), the counter or 0}.
var Status = driver.NewScript(`
return {redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0')}
`)
