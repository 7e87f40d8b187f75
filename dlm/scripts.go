package dlm

import (
	"strconv"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Operation names, as they appear in errors and logs.
const (
	opLock   = "lock"
	opExtend = "extend"
	opUnlock = "unlock"
)

// The scripts all take the lock's keys as KEYS and the holder's secret as
// ARGV[1]; those that announce grants and releases take announce's flag as
// their last argument (see wake.go). A node's answer is all or nothing for the
// keys it is given, so a lock over several keys is counted per node.

// owns defines owns(v): whether v, a lock key's value, is the holder's
// secret ARGV[1]. A reserved value ([readersMark]) is nobody's secret, even
// when ARGV[1] equals it: the marker is public, so a caller that passed it
// as its secret (from a forged [Handle]) must get what any stranger gets.
// Every script that compares a lock key with ARGV[1] does it through owns.
const owns = `
local function owns(v)
  return v == ARGV[1] and v ~= '` + readersMark + `'
end
`

// acquireScript sets every key to the secret with a TTL of ARGV[2] ms, if none
// is held under another secret. A key already holding this secret counts as
// free, so the script is safe to run twice. It returns 1 or 0.
var acquireScript = driver.NewScript(plainKeys + acquireBody)

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
  clearIntent(KEYS[i])
  announce(KEYS[i], '` + wakeGrant + `')
end
return 1
`

// plainKeys starts a script whose KEYS are all lock keys (or lock keys and
// counters): nk counts them.
const plainKeys = announce + `local nk = #KEYS
`

// guardPrelude starts a script under the restart guard (see
// WithRestartGuard). The last key is the guard key, which holds the time (ms,
// by the node's clock) from which the node may count toward a quorum: its
// start time plus ARGV[3] ms, computed from its uptime when the key is
// missing — the first time, after the node lost its data, or after the key
// expired. Until then the script returns -1 and changes nothing else.
//
// The invariant: the node is counted no sooner than window after it
// started. INFO's uptime_in_seconds is the difference of the current and
// the start time, each cut to the second, so it can read 1 a millisecond
// after the start: the node started less than uptime+1 s ago, and the
// start time the script takes is that latest one, now - (uptime-1) s. A
// node that lost its data is counted between window and window rounded up
// to the second plus 1 s after it started
// (TestRestartGuardNotSoonerThanWindow).
//
// Every run sets the guard key's TTL to the time left until that moment
// plus the window: a key locked within the last window keeps its guard key,
// so a node restarted with its data is counted at once, and a key left
// unused for a window leaves nothing behind. A guard key that expired is
// computed again from the uptime, which gives the same moment (to within
// the second the uptime is counted in) while the node has not restarted
// (passed, so the node counts) and a later one after a restart: the guard
// never counts a node sooner than without the TTL.
var guardPrelude = guardPreludeWith(3)

// fencedGuardPrelude is guardPrelude for the fenced scripts, whose ARGV[3]
// is the counters' expiry: the window is ARGV[4].
var fencedGuardPrelude = guardPreludeWith(4)

// guardPreludeWith returns guardPrelude with the window in ARGV[i].
func guardPreludeWith(i int) string {
	return announce + `local nk = #KEYS - 1
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[` + strconv.Itoa(i) + `])
local safe = tonumber(redis.call('GET', KEYS[#KEYS]) or '-1')
if safe < 0 then
  local up = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)'))
  safe = now - (up - 1) * 1000 + window
end
redis.call('SET', KEYS[#KEYS], safe, 'PX', math.max(safe - now, 0) + window)
if now < safe then return -1 end
`
}

// releaseScript deletes the keys that still hold the secret and returns how
// many it deleted. It never touches another holder's key. For each key it
// deletes, it deletes a writer's intent, which a grant by SET NX left in
// place (see [plainAcquire]), and announces the release on the key's wake
// channel, when anyone listens there, with the number of listeners:
// wakeRelease and "5" (see [announce]).
var releaseScript = driver.NewScript(announce + owns + `
local n = 0
for _, k in ipairs(KEYS) do
  if owns(redis.call('GET', k)) then
    n = n + redis.call('DEL', k)
    clearIntent(k)
    announce(k, nil)
  end
end
return n
`)

// extendScript sets the TTL of every key to ARGV[2] ms if all still hold the
// secret, and returns 1; otherwise it changes nothing and returns 0. It never
// recreates an expired key.
var extendScript = driver.NewScript(owns + `
for _, k in ipairs(KEYS) do
  if not owns(redis.call('GET', k)) then return 0 end
end
for _, k in ipairs(KEYS) do
  redis.call('PEXPIRE', k, ARGV[2])
end
return 1
`)

// The fenced scripts take the lock's keys as KEYS[1..n] and their fencing
// counters as KEYS[n+1..2n] (see docs/fencing.md). The fenced acquire
// scripts take the counters' expiry in ms as ARGV[3] (see
// WithFenceExpiry): "0", counters never expire; otherwise a grant sets each
// counter's TTL to it, and a missing counter starts from the node's clock
// in microseconds instead of 0.

// fencedAcquireScript is acquireScript that also, when it takes the keys,
// sets every counter to one more than the largest of them and returns that
// value (at least 1); it returns 0 when another holder has a key.
var fencedAcquireScript = driver.NewScript(plainKeys + fencedAcquireBody)

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
  clearIntent(KEYS[i])
  announce(KEYS[i], '` + wakeGrant + `')
end
return f
`

// The acquire scripts under the restart guard.
var (
	guardedAcquireScript       = driver.NewScript(guardPrelude + acquireBody)
	guardedFencedAcquireScript = driver.NewScript(fencedGuardPrelude + fencedAcquireBody)
)

// raiseFenceScript raises every counter to at least ARGV[2] if all the lock
// keys still hold the secret ARGV[1], and returns 1; otherwise it changes
// nothing and returns 0.
var raiseFenceScript = driver.NewScript(owns + `
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

// newInspectScript returns the status script: for KEYS[1] (a lock key) and
// KEYS[2] (its counter) it returns {PTTL of the key, counter or 0}.
func newInspectScript() *driver.Script {
	return driver.NewScript(`
return {redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0')}
`)
}
