package script

import (
	"fmt"
	"strconv"

	"github.com/dlmgo/redlock/dlm/driver"
)

// owns defines owns(v): whether v, a lock key's value, is the holder's
// secret ARGV[1]. A reserved value ([ReadersMark], a key handed to a waiter,
// anything beginning with [ReservedPrefix]) is nobody's secret, even when
// ARGV[1] equals it: such a value may be public, so a caller that passed it
// as its secret (from a forged handle) must get what any stranger gets.
// Every script that compares a lock key with ARGV[1] does it through owns.
var owns = `
local function owns(v)
  return v == ARGV[1] and string.sub(v, 1, ` + reservedPrefixLen + `) ~= '` + ReservedPrefix + `'
end
`

// reservedPrefixLen is the length of ReservedPrefix, as the scripts write
// it.
var reservedPrefixLen = strconv.Itoa(len(ReservedPrefix))

// The mutex's acquire scripts take, after the lock keys (and their fencing
// counters), the lines of the lock keys ([LinesOf]), and, under the restart
// guard, the guard key last. ARGV ends with the waiter's arguments before
// announce's flag: its id ("" for a call that takes no place, TryLock's),
// the life of its place (ms), its ticket (see [lineLua]), the bound of a
// line ([Fairness.MaxWaiters]), and "1" for fairness.
//
// A key may be taken when it is free, holds the secret already (the script
// is safe to run twice), or is reserved for the waiter; with fairness, a
// free key only by the head of its line, or by anyone while the line is
// empty. A grant sets every key to the secret with the TTL, leaves a
// writer's intent in place, as SET NX does (the release deletes it), and
// announces nothing. It writes no line: a
// place the waiter had stays while it holds the lock, and the lock's
// release gives it up; this node's grant is only a vote, and if the attempt
// fails all the same (too few grants, or too late) its release gives the
// waiter its place back under its ticket, ahead of everyone who asked
// after it ([ReleaseAttempt]). A refusal gives the waiter a place in each key's line, or renews it (see
// [lineLua]), and records a waiting writer's intent where readers hold a
// key (see [Flag]). Reply: {the grant (1, or the new fencing counter) or 0,
// the waiter's ticket}: a ticket of 0 for a grant or a caller without an
// id, -1 when a line is full. A refusal adds a third element, the PTTL
// (ms) of the key that refused, 0 when it was free (another waiter's turn),
// so that a waiter knows when a holder that never releases lets go; and,
// for a waiter with an id, a fourth: 1 when anyone listens on the key's
// broadcast channel (a lease's waiter, an observer, or a process of the
// previous release, whose releases name nobody), else 0; such a refusal
// marks the listeners ([ListenKey]), so that the release announces itself
// there ([Release]). The guarded forms reply -1 while the node may not
// count yet.
//
// The common case stays as cheap as SET NX PX: a free key is taken without
// reading the clock, and, with fairness, after one lookup of its line's
// existence; the line is read only when it exists.
var (
	Acquire              = acquireScript(false, 0)
	FencedAcquire        = acquireScript(true, 0)
	GuardedAcquire       = acquireScript(false, 3)
	GuardedFencedAcquire = acquireScript(true, 4)
)

// acquireScript returns the mutex's acquire script, fenced or not, under
// the restart guard whose window is ARGV[guardArg] (0: no guard).
func acquireScript(fenced bool, guardArg int) *driver.Script {
	f, g := 0, 0
	if fenced {
		f = 1
	}
	if guardArg > 0 {
		g = 1
	}
	src := announce + lazyNow + fmt.Sprintf("local n = (#KEYS - %d) / %d\nlocal lk = n * %d\n", g, 3+f, 1+f)
	if guardArg > 0 {
		src += guardCheck(guardArg)
	}
	take := takeBody
	if fenced {
		take = fencedTakeBody
	}
	return driver.NewScript(src + lineLua + owns + "local function take()" + take + "end\n" + acquireBody)
}

// takeBody sets every lock key to the secret with the TTL, and returns 1.
const takeBody = `
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
`

// fencedTakeBody is takeBody that also sets every counter (KEYS[n+1..2n])
// to one more than the largest of them, and returns that value. The
// counters' expiry is ARGV[3] (ms): "0", counters never expire; otherwise
// each counter's TTL is set to it, and a missing counter starts from the
// node's clock in microseconds instead of 0 (see docs/fencing.md).
const fencedTakeBody = `
local fx = tonumber(ARGV[3])
local f = 0
for i = n + 1, 2 * n do
  local c = redis.call('GET', KEYS[i])
  if c then
    c = tonumber(c)
  elseif fx > 0 then
    clock()
    c = tonumber(tn[1]) * 1000000 + tonumber(tn[2])
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
end
return f
`

// acquireBody decides an attempt, for a script that has set n, lk and now,
// and defined take() and the line's functions.
const acquireBody = `
local wa = #ARGV - 5
local me, life, ticket, bound = ARGV[wa], tonumber(ARGV[wa + 1]), tonumber(ARGV[wa + 2]), tonumber(ARGV[wa + 3])
local fair = ARGV[wa + 4] == '1'
local mark = '` + nextPrefix + `' .. me
local function mayTake(i, v)
  if me ~= '' and v == mark then return true end
  if v and not owns(v) then return false end
  if v or not fair then return true end
  if redis.call('ZCARD', (lineOf(i))) == 0 then return true end
  local h = headOf(i)
  return h == nil or h == me
end
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  if not mayTake(i, v) then
    readersHold(KEYS[i], v)
    local left = 0
    if v then left = math.max(redis.call('PTTL', KEYS[i]), 0) end
    if me == '' then return {0, 0, left} end
    local open = 0
    if listeners(KEYS[i]) > 0 then
      open = 1
      heard(KEYS[i], left)
    end
    local keep = math.max(life, tonumber(ARGV[2]))
    local t = 0
    for j = 1, n do
      local p = place(j, me, life, ticket, bound, keep)
      if p < 0 then return {0, -1, left, open} end
      if p > t then t = p end
    end
    return {0, t, left, open}
  end
end
return {take(), 0}
`

// How a release runs ([Release]'s ARGV[6]).
const (
	// ReleaseLock releases a lock that was obtained, and hands each key it
	// frees on to the head of the key's line.
	ReleaseLock = "r"
	// ReleaseAttempt releases a failed attempt: the keys are freed, never
	// handed on and never announced, and the waiter keeps its place.
	ReleaseAttempt = "f"
	// ReleaseKeepTurn releases a failed attempt that a release handed the
	// keys to: the keys it took are reserved for the waiter again, which
	// keeps its turn, and nothing is announced.
	ReleaseKeepTurn = "k"
)

// releaseQuick is the release of keys with nothing beside them to serve:
// no line, no writer's intent, no mark of listeners ([ListenKey]), no
// election's leader key (its observers listen) and no line of the
// previous release's fair waiters, all found by one EXISTS per key, and
// nobody on the key's broadcast channel (one PUBSUB NUMSUB: the waiters of
// the previous release's processes, which leave no mark, listen there). There
// the full release would delete each key that holds the secret (or is
// reserved for the releasing waiter, by the lock's release), hand nothing
// on and announce nothing to anyone, and so does this, without reading
// the clock: a compare-and-delete. A failed attempt's release takes it
// only for a caller without an id, which has no place to give back. Where
// EXISTS fails (an ACL written for an earlier release, without +exists),
// the release takes the full way.
const releaseQuick = `
local function quiet(k, ws)
  return redis.pcall('EXISTS', ws, k .. '` + IntentSuffix + `', k .. '` + ListenSuffix + `', k .. '` + LeaderSuffix + `', k .. '` + PreviousLineSuffix + `') == 0
    and listeners(k) == 0
end
if ARGV[6] == '` + ReleaseLock + `' or ARGV[2] == '' then
  local n, quick = #KEYS / 3, true
  for i = 1, n do
    if not quiet(KEYS[i], KEYS[n + 2 * i - 1]) then
      quick = false
      break
    end
  end
  if quick then
    local deleted = 0
    for i = 1, n do
      local v = redis.call('GET', KEYS[i])
      if owns(v) then
        deleted = deleted + 1
        redis.call('DEL', KEYS[i])
      elseif v and ARGV[2] ~= '' and ARGV[6] == '` + ReleaseLock + `' and v == '` + nextPrefix + `' .. ARGV[2] then
        redis.call('DEL', KEYS[i])
      end
    end
    return deleted
  end
end
`

// Release releases a lock, or a failed attempt, on one node.
//
// The lock's release (ReleaseLock) frees each key that holds the secret,
// is reserved for the releasing waiter, or is free already, and hands it on
// to the head of its line (see [lineLua]); a key it freed and handed to
// nobody is announced on the broadcast channel, when anyone listens there
// (readers, permits' waiters, an election's observers), with the
// number of listeners: [WakeRelease] and "5". A key held by another holder
// is never touched. It deletes a writer's intent with each key that held
// the secret, and takes the releasing waiter out of the lines.
//
// What a release serves beside the keys costs only those who use it: the
// release first looks up, with one EXISTS per key, whether anything is
// there to serve — a line, a writer's intent, the mark of listeners on
// the broadcast channel ([ListenKey], left by a refused reader or by a
// refusal that counted listeners), an election's leader key (whose
// observers listen), the previous release's line — and one PUBSUB NUMSUB
// whether anyone listens on the key's broadcast channel (a process of the
// previous release, which leaves no mark, or a listener whose mark expired
// while the holder extended its lock); where nothing is, it is a
// compare-and-delete: it reads no clock, scans no line and announces
// nothing (releaseQuick).
//
// A failed attempt's release (ReleaseAttempt, ReleaseKeepTurn) frees the
// keys that hold the secret — or reserves them for the waiter again, with
// ReleaseKeepTurn — announces nothing, and gives the waiter its place back
// in every line under its ticket: it still waits. A ReleaseAttempt places it
// as an attempt does, within the line's bound: a full line takes no more
// waiters, and a waiter the bound refused gets no place from its attempt's
// release. (ReleaseKeepTurn restores the turn of a waiter that a release
// handed the keys to, whatever the bound.) A waiting writer's
// failed attempt (announce's flag with WriterWaits) keeps its intent: the
// nodes that granted it must not let new readers in.
//
// KEYS: the lock keys, then their lines ([LinesOf]). ARGV: the secret, the
// waiter's id ("" for none), its ticket, the life of its place (ms), how
// long a key handed on stays reserved (ms), how (ReleaseLock,
// ReleaseAttempt or ReleaseKeepTurn), the bound of a line (optional: none
// when absent), announce's flag. Reply: the number
// of keys that held the secret.
var Release = driver.NewScript(announce + owns + releaseQuick + lazyNow + `local lk = #KEYS / 3
local n = lk
` + lineLua + waitsLua + `
local me, ticket, life, ms, how = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local bound = -1
if #ARGV >= 8 then bound = tonumber(ARGV[7]) end
if how == '` + ReleaseKeepTurn + `' then bound = -1 end
local mark = '` + nextPrefix + `' .. me
local deleted = 0
for i = 1, n do
  local k = KEYS[i]
  local v = redis.call('GET', k)
  local mine = owns(v)
  if mine then deleted = deleted + 1 end
  if how == '` + ReleaseLock + `' then
    if me ~= '' then leave(i, me) end
    if mine or not v or (me ~= '' and v == mark) then
      if v then
        redis.call('DEL', k)
        clearIntent(k)
      end
      if not handOn(i, ms) and v then released(k) end
    end
  else
    if mine then
      if how == '` + ReleaseKeepTurn + `' and me ~= '' then
        redis.call('SET', k, mark, 'PX', ms)
      else
        redis.call('DEL', k)
        if not waits then clearIntent(k) end
      end
    end
    if me ~= '' then place(i, me, life, ticket, bound, life) end
  end
end
return deleted
`)

// Extend sets the TTL of every key if all still hold the secret; otherwise
// it changes nothing. It never recreates an expired key. ([ExtendBatch]
// extends a lock the same way, with other locks in one run.)
//
// KEYS: the lock keys. ARGV: the secret, the TTL (ms). Reply: 1 when
// extended, 0 otherwise.
var Extend = driver.NewScript(extendLockFn + `
return extendLock(1, #KEYS, ARGV[1], ARGV[2])
`)

// FenceLimit bounds every fencing counter and token: the nodes count in
// Lua numbers, exact only below it, and a token must fit a JSON number. A
// counter a node reports at or above it was not written by these scripts.
const FenceLimit = 1 << 53

// fenceLimitLua is [FenceLimit] as the scripts write it.
const fenceLimitLua = "9007199254740992"

// The fenced scripts take the lock's keys as KEYS[1..n] and their fencing
// counters ([FenceKey]) as KEYS[n+1..2n] (see docs/fencing.md).

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
// key (-2 when absent), the counter or 0, 1 when the key is reserved for a
// waiter a release handed it to (see [ReservedFor]), else 0}.
var Status = driver.NewScript(`
local v = redis.call('GET', KEYS[1])
local reserved = 0
if v and string.sub(v, 1, ` + strconv.Itoa(len(nextPrefix)) + `) == '` + nextPrefix + `' then reserved = 1 end
return {redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0'), reserved}
`)
