package script

import (
	"strconv"

	"github.com/dlmgo/redlock/dlm/driver"
)

// List runs one step of a SCAN of a node for lock keys, and reports what
// the node knows of each, without revealing a holder's secret. It is read
// only, and no acquire or release path runs it.
//
// KEYS: none. ARGV: the SCAN cursor, the MATCH pattern, the COUNT, and the
// length of the lock keys' prefix with its "{". Reply: {the next cursor,
// then eight values per lock key found: the key, its state (1 held by a
// holder, 2 held by readers, 3 reserved for a waiter), its PTTL, its
// fencing counter or 0, the live places of its line, for readers the live
// readers, and for a labelled holder ([OwnerKey]) the grant time (ms) and
// the label, else 0 and ”}. A name found that is no lock key (it does not end with
// "}", or holds no string) is left out: a lock's companion keys, and
// whatever else shares the prefix.
var List = driver.NewScript(ownerOf + `
local r = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
local plen = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {r[1]}
local function live(k)
  if redis.call('TYPE', k)['ok'] ~= 'zset' then return 0 end
  return redis.call('ZCOUNT', k, now, '+inf')
end
for _, k in ipairs(r[2]) do
  if #k > plen and string.sub(k, -1) == '}' and redis.call('TYPE', k)['ok'] == 'string' then
    local v = redis.call('GET', k)
    local st, readers = 1, 0
    if v == '` + ReadersMark + `' then
      st, readers = 2, live(k .. '` + ReadersSuffix + `')
    elseif string.sub(v, 1, ` + strconv.Itoa(len(nextPrefix)) + `) == '` + nextPrefix + `' then
      st = 3
    end
    local fence = 0
    if redis.call('TYPE', k .. '` + FenceSuffix + `')['ok'] == 'string' then
      fence = tonumber(redis.call('GET', k .. '` + FenceSuffix + `')) or 0
    end
    local since, label = 0, ''
    if st == 1 and #v <= ` + maxOwnerValueLua + ` then since, label = ownerOf(k, v) end
    local n = #out
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5], out[n + 6], out[n + 7], out[n + 8] =
      k, st, redis.call('PTTL', k), fence, live(k .. '` + PlacesSuffix + `'), readers, since, label
  end
end
return out
`)

// ForceRelease deletes a lock key's keys, whoever holds them, for an
// operator breaking a stale lock: the key itself, a read lock's readers
// and a waiting writer's intent, and a semaphore's permits. It leaves the
// fencing counter, which alone keeps a late write of the broken holder out
// of a fenced store, the restart guard and the line of waiters. No acquire
// or release path runs it.
//
// KEYS: the lock key, its readers, its intent, its permits. ARGV: none.
// Reply: the number of keys deleted.
var ForceRelease = driver.NewScript(`return redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])`)
