package script

import "github.com/dlmgo/redlock/dlm/driver"

// fairPart ends a fair acquire script. The script starts with a header that
// sets nk to the number of KEYS before the line's three keys, and defines
// take(), which tries to take the lock and returns 0 or a positive value.
// ARGV ends with the waiter's id, the life of its place (ms), the ticket it
// holds from other nodes, the bound of the line, and announce's flag.
//
// A ticket held from other nodes is taken only below [FenceLimit], where Lua
// numbers are exact, and the counter is written as an integer: a waiter
// passes on what any node answered, and a counter that INCR refuses would
// keep every new waiter out of the line.
//
// It drops the places that expired; lets the waiter take the lock if the
// line is empty or it is at the head; otherwise it gives the waiter a place,
// or renews it, under the larger of a new ticket and the one the waiter
// holds, and returns {0, ticket}: {0, -1} when the line is full, {0, 0} for a
// waiter without an id.
//
// A waiter that takes the lock keeps its place, renewed, and one that takes
// it from an empty line is given one; the grant returns its ticket. This
// node's grant is only a vote, and the attempt may still fail (too few
// grants, or too late): the release of a failed attempt keeps the place, so
// the waiter is still at the head for its next attempt, ahead of everyone who
// asked after it. The release of the lock obtained gives the place up (see
// [FairRelease]). The line has room for bound waiters besides the place of
// the holder.
//
// Each place given or renewed makes the line's three keys live at least the
// longer of the place's life and the lock's TTL (ARGV[2]) from now: the
// counter of tickets outlives every place in the line, so a new waiter's
// ticket is always above theirs, and once the line has been empty that long
// the keys are gone. A counter that expired starts again from 1 behind an
// empty line, which orders the waiters that come next as well.
const fairPart = `
nk = nk - 3
local line, places, tickets = KEYS[nk + 1], KEYS[nk + 2], KEYS[nk + 3]
local fa = #ARGV - 4
local me, life, held, bound = ARGV[fa], tonumber(ARGV[fa + 1]), tonumber(ARGV[fa + 2]), tonumber(ARGV[fa + 3])
local keep = math.max(life, tonumber(ARGV[2]))
` + dropExpired + `local function place()
  local mine = tonumber(redis.call('ZSCORE', line, me))
  if not mine then
    if redis.call('ZCARD', line) > bound then return -1 end
    mine = redis.call('INCR', tickets)
  end
  if held > mine and held < ` + fenceLimitLua + ` then mine = held end
  if mine > tonumber(redis.call('GET', tickets) or '0') then
    redis.call('SET', tickets, string.format('%.0f', mine))
  end
  redis.call('ZADD', line, mine, me)
  redis.call('ZADD', places, now + life, me)
  for _, k in ipairs({tickets, line, places}) do
    if redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  end
  return mine
end
local head = redis.call('ZRANGE', line, 0, 0)[1]
if head == nil or head == me then
  local r = take()
  if r > 0 then
    if me ~= '' then return {r, place()} end
    return {r, 0}
  end
end
if me == '' then return {0, 0} end
return {0, place()}
`

// dropExpired sets now to the node's time (ms) and drops from line and
// places the waiters whose places ended.
const dropExpired = zremAll + `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', places, '-inf', now)
zremAll(line, gone)
zremAll(places, gone)
`

// fairScript returns the fair form of an acquire script made of header and
// body.
func fairScript(header, body string) *driver.Script {
	return driver.NewScript(header + "local function take()" + body + "end\n" + fairPart)
}

// The fair acquire scripts, by fencing and restart guard: [Acquire],
// [FencedAcquire], [GuardedAcquire] and [GuardedFencedAcquire] behind a
// line (see dlm's WithFairness). KEYS are those of the script behind the
// line with the line's three keys ([LineKeys]) before the guard key; ARGV
// those of that script with the waiter's id, the life of its place (ms),
// the ticket it holds from other nodes and the bound of the line before
// announce's flag. Reply: {that script's reply, the waiter's ticket}:
// {0, -1} when the line is full, a ticket of 0 for a waiter without an id.
var (
	FairAcquire              = fairScript(keysPrelude, acquireBody)
	FairFencedAcquire        = fairScript(keysPrelude, fencedAcquireBody)
	FairGuardedAcquire       = fairScript(guardPrelude, acquireBody)
	FairGuardedFencedAcquire = fairScript(fencedGuardPrelude, fencedAcquireBody)
)

// FairRelease is [Release] for a lock with a line. It gives up the place
// of the waiter that obtained the lock, and announces each release with the
// id of the waiter at the head of the line, after dropping expired places,
// so that only that waiter wakes, or with [WakeAll] when the line is empty.
// It deletes a writer's intent with each key, as [Release] does.
//
// KEYS: the lock keys, the line, the places. ARGV: the secret, the id of
// the waiter whose place it gives up ("" for none), announce's flag.
// Reply: the number of keys deleted.
var FairRelease = driver.NewScript(announce + owns + waitsLua + `
local nk = #KEYS - 2
local line, places = KEYS[nk + 1], KEYS[nk + 2]
if ARGV[2] ~= '' then
  redis.call('ZREM', line, ARGV[2])
  redis.call('ZREM', places, ARGV[2])
end
` + dropExpired + `local head = redis.call('ZRANGE', line, 0, 0)[1] or '` + WakeAll + `'
local n = 0
for i = 1, nk do
  if owns(redis.call('GET', KEYS[i])) then
    n = n + redis.call('DEL', KEYS[i])
    if not waits then clearIntent(KEYS[i]) end
    announce(KEYS[i], head)
  end
end
return n
`)

// LeaveLine gives up a waiter's place in a line.
//
// KEYS: the line, the places. ARGV: the waiter's id. Reply: 1.
var LeaveLine = driver.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)
