package dlm

import "github.com/dlmgo/redlock/dlm/driver"

// The read-write lock keeps, on each node, under the lock's own key
// prefix{name}:
//
//   - the key itself: a writer's secret (the mutex), or readersMark while
//     readers hold it, with a TTL that ends with the last reader's lease;
//   - prefix{name}:readers, a sorted set of the readers' secrets scored by the
//     end of their lease (ms, by the node's clock);
//   - prefix{name}:wait, the intent of a writer that waits for the readers
//     to leave: while it exists no new reader is let in.
//
// Every writer script (the mutex's acquire scripts) sees readersMark as
// another holder's value and refuses, so writers need nothing else to be
// kept out by readers, and readers are kept out by a writer's secret.

// readersMark is the value of a lock key held by readers. A writer's secret
// begins with 22 base64url characters, so it is never readersMark.
const readersMark = "dlm:readers"

// Suffixes of the read-write lock's keys, in the lock key's hash slot.
const (
	readersSuffix = ":readers"
	intentSuffix  = ":wait"
)

// nodeNow sets now to the node's time in ms.
const nodeNow = `
local tn = redis.call('TIME')
local now = tonumber(tn[1]) * 1000 + math.floor(tonumber(tn[2]) / 1000)
`

// dropEnded defines dropEnded(set), which removes the leases that ended from
// set. (ZRANGEBYSCORE and ZREM, the commands the fair line uses, rather than
// ZREMRANGEBYSCORE: the ACL docs/security.md lists stays the same.)
const dropEnded = `
local function dropEnded(set)
  local gone = redis.call('ZRANGEBYSCORE', set, '-inf', now)
  if #gone > 0 then redis.call('ZREM', set, unpack(gone)) end
end
`

// spanLeases sets the TTL of the lease set KEYS[set] and of the keys
// listed with it to the end of its longest lease, or deletes them all when
// no lease is left and returns true. Leases that ended are dropped first.
const spanLeases = `
local function spanLeases(set, others)
  dropEnded(set)
  local top = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  if #top == 0 then
    redis.call('DEL', set, unpack(others))
    return true
  end
  local life = tonumber(top[2]) - now
  redis.call('PEXPIRE', set, life)
  for _, k in ipairs(others) do redis.call('PEXPIRE', k, life) end
  return false
end
`

// readAcquireBody lets the reader with secret ARGV[1] in for ARGV[2] ms when
// no writer holds KEYS[1] and none waits (KEYS[3]), and returns 1;
// otherwise it returns 0 and changes nothing. KEYS[2] is the readers' set.
// A reader already in counts as free, so the script is safe to run twice.
const readAcquireBody = nodeNow + dropEnded + spanLeases + `
local v = redis.call('GET', KEYS[1])
if v and v ~= '` + readersMark + `' then return 0 end
if redis.call('GET', KEYS[3]) and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
redis.call('SET', KEYS[1], '` + readersMark + `')
spanLeases(KEYS[2], {KEYS[1]})
return 1
`

// The read lock's acquire scripts, plain and under the restart guard (whose
// key then ends KEYS, and whose window is ARGV[3]).
var (
	readAcquireScript        = driver.NewScript(announce + readAcquireBody)
	guardedReadAcquireScript = driver.NewScript(guardPrelude + readAcquireBody)
)

// readExtendScript sets the lease of reader ARGV[1] to end ARGV[2] ms from
// now and returns 1, if the reader is still in (KEYS[1] marked, its lease
// not ended); otherwise it returns 0 and changes nothing. It never lets a
// reader back in.
var readExtendScript = driver.NewScript(nodeNow + dropEnded + spanLeases + `
if redis.call('GET', KEYS[1]) ~= '` + readersMark + `' then return 0 end
local s = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not s or tonumber(s) <= now then return 0 end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
spanLeases(KEYS[2], {KEYS[1]})
return 1
`)

// readReleaseScript removes reader ARGV[1] and returns 1 if it was in, 0
// otherwise. When the last reader leaves it deletes the lock key and
// announces the release; the key's TTL otherwise follows the longest lease
// left. A writer's key is never touched.
var readReleaseScript = driver.NewScript(announce + nodeNow + dropEnded + spanLeases + `
local n = redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('GET', KEYS[1]) ~= '` + readersMark + `' then return n end
if spanLeases(KEYS[2], {KEYS[1]}) then announce(KEYS[1], nil) end
return n
`)
