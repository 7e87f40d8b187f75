package script

import (
	"strconv"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Each lock key has, on each node, a line of the waiters that a node
// refused it to: two sorted sets, the waiters by ticket and the ends of
// their places (ms, by the node's clock) ([LineKeys]). A release that frees
// a key hands it on to the head of its line: the key then holds
// [ReservedFor] that waiter, with a short TTL, and the waiter is named on
// its manager's channel and leaves the line. Only that waiter may take a
// key reserved for it; anyone else is refused there, as by a holder. So the
// lock passes from a holder to the longest waiter without a race between
// the waiters, or with the releaser asking again at once, and a release
// wakes one waiter, not all of them. A reservation that nobody takes (its
// waiter died) expires, and the key is free again.
//
// A waiter's ticket is its own, the same on every node: the time it began
// to wait, in microseconds of its own clock. Every line therefore orders
// the waiters alike at once, and what one node says cannot change the order
// of another (a ticket that is no positive integer below [FenceLimit] is
// taken as the node's own clock). With [WithFairness] only the head of a
// line (or the waiter a key is reserved for) may take a key whose line is
// not empty; otherwise a waiter may take a free key whatever its place.

// Lengths of a waiter's id: a manager's id, then the waiter's own part,
// both of URL-safe base64 characters. The releases name the waiter on the
// channel of the manager its id begins with.
const (
	ManagerIDLen = 11
	WaiterIDLen  = 22
)

// managerIDLenLua is ManagerIDLen as the scripts write it.
var managerIDLenLua = strconv.Itoa(ManagerIDLen)

// zremAll defines zremAll(set, members), which removes members from set a
// thousand at a time: Lua's unpack fails on about 8,000 values ("too many
// results to unpack"), and a set may hold more entries that ended at once
// (a fleet of readers, or of waiters, that crashed together).
const zremAll = `
local function zremAll(set, members)
  for i = 1, #members, 1000 do
    redis.call('ZREM', set, unpack(members, i, math.min(i + 999, #members)))
  end
end
`

// nodeNow sets now to the node's time in ms, and tn to the node's TIME, and
// defines clock(), which returns now.
const nodeNow = `
local tn = redis.call('TIME')
local now = tonumber(tn[1]) * 1000 + math.floor(tonumber(tn[2]) / 1000)
local function clock() return now end
`

// lazyNow defines clock(), which returns the node's time in ms, reading
// TIME on its first call only, and sets now and tn then: a script that
// reads the time only on some paths pays for TIME only on those.
const lazyNow = `
local tn, now
local function clock()
  if not now then
    tn = redis.call('TIME')
    now = tonumber(tn[1]) * 1000 + math.floor(tonumber(tn[2]) / 1000)
  end
  return now
end
`

// lineLua defines the line's functions, for a script that has set lk (the
// number of KEYS before the first line's keys), and defined clock()
// ([nodeNow], [lazyNow]) and announce's functions:
//
//   - place(i, id, life, ticket, bound, keep) gives waiter id a place in
//     lock key i's line under ticket, or renews it, for life ms. It returns
//     the ticket, or -1 when the line holds bound waiters already, once
//     the places that ended are dropped (bound below 0: no bound). The line's keys live keep ms more (one waiter's keep
//     can shorten another's: that one places itself again at its next
//     attempt).
//   - leave(i, id) takes id out of lock key i's line; a line left empty
//     is deleted, so that nothing stays behind.
//   - handOn(i, ms) hands free lock key i on to the head of its line: the
//     head out of the line and woken, and the key reserved for it for ms —
//     unless anyone listens on the key's broadcast channel (readers,
//     permits' waiters, or waiters of the previous release, which know
//     nothing of reservations): then the key stays free for all of them,
//     and handOn returns false, as it does, doing nothing, when the line is
//     empty or the flag is Quiet; the caller then announces the release on
//     the broadcast channel.
//
// Places that ended are dropped when the line is read for its head, and
// when the bound is reached. A waiter without an end of its place (written
// by a client that may write under the prefix, or left when the ends alone
// were evicted) has no place: it is dropped when it comes to the head, so
// that it never holds the line up. Until then it takes room in the line,
// as a place does. An empty line costs headOf no more than the ZRANGE it
// always ran; a line with a head, one ZSCORE more.
const lineLua = zremAll + `
local function lineOf(i)
  local b = lk + 2 * (i - 1)
  return KEYS[b + 1], KEYS[b + 2]
end
local function dropLeft(ws, ends)
  local gone = redis.call('ZRANGEBYSCORE', ends, '-inf', clock())
  zremAll(ws, gone)
  zremAll(ends, gone)
end
local function place(i, id, life, ticket, bound, keep)
  local ws, ends = lineOf(i)
  if not ticket or not (ticket >= 1 and ticket < ` + fenceLimitLua + `) then ticket = clock() * 1000 end
  if bound >= 0 and not redis.call('ZSCORE', ws, id) and redis.call('ZCARD', ws) >= bound then
    dropLeft(ws, ends)
    if redis.call('ZCARD', ws) >= bound then return -1 end
  end
  redis.call('ZADD', ws, ticket, id)
  redis.call('ZADD', ends, clock() + life, id)
  redis.call('PEXPIRE', ws, keep)
  redis.call('PEXPIRE', ends, keep)
  return ticket
end
local function leave(i, id)
  local ws, ends = lineOf(i)
  if redis.call('ZREM', ws, id) == 0 then return end
  redis.call('ZREM', ends, id)
  if redis.call('ZCARD', ws) == 0 then redis.call('DEL', ends) end
end
local function headOf(i)
  local ws, ends = lineOf(i)
  dropLeft(ws, ends)
  local h = redis.call('ZRANGE', ws, 0, 0)[1]
  while h and not redis.call('ZSCORE', ends, h) do
    redis.call('ZREM', ws, h)
    h = redis.call('ZRANGE', ws, 0, 0)[1]
  end
  return h
end
local function handOn(i, ms)
  if not loud then return false end
  local h = headOf(i)
  if not h then return false end
  leave(i, h)
  wake(KEYS[i], h)
  if listeners(KEYS[i]) > 0 then return false end
  redis.call('SET', KEYS[i], '` + nextPrefix + `' .. h, 'PX', ms)
  return true
end
`

// Leave takes a waiter that gives up out of the lines of its lock keys, and
// hands on each key reserved for it to the next in line, or frees it
// (announced on the broadcast channel when nobody waits in line).
//
// KEYS: the lock keys, then their lines ([LinesOf]). ARGV: the waiter's
// id, how long a key handed on stays reserved (ms), announce's flag.
// Reply: 1.
var Leave = driver.NewScript(announce + nodeNow + `local lk = #KEYS / 3
` + lineLua + `
local me = ARGV[1]
for i = 1, lk do
  leave(i, me)
  if redis.call('GET', KEYS[i]) == '` + nextPrefix + `' .. me then
    redis.call('DEL', KEYS[i])
    if not handOn(i, tonumber(ARGV[2])) then released(KEYS[i]) end
  end
end
return 1
`)
