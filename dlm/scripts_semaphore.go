package dlm

import "github.com/dlmgo/redlock/dlm/driver"

// A semaphore keeps, on each node, the sorted set prefix{name}:permits of
// its permits' secrets scored by the end of their lease (ms, by the node's
// clock). Its TTL follows the longest lease, so a crashed holder's permit
// frees itself when its lease ends.

// permitsSuffix names a semaphore's set of permits.
const permitsSuffix = ":permits"

// permitAcquireBody grants permit ARGV[1] for ARGV[2] ms and returns 1 when
// fewer than ARGV[#ARGV-1] (the limit) live permits are held on the node;
// otherwise it returns 0 and changes nothing. A permit already held counts
// as free, so the script is safe to run twice.
const permitAcquireBody = nodeNow + dropEnded + spanLeases + `
dropEnded(KEYS[1])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[#ARGV - 1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
spanLeases(KEYS[1], {})
return 1
`

// The semaphore's acquire scripts, plain and under the restart guard (whose
// key then ends KEYS, and whose window is ARGV[3]).
var (
	permitAcquireScript        = driver.NewScript(announce + permitAcquireBody)
	guardedPermitAcquireScript = driver.NewScript(guardPrelude + permitAcquireBody)
)

// permitExtendScript sets the lease of permit ARGV[1] to end ARGV[2] ms
// from now and returns 1 if it is still held; otherwise it returns 0 and
// changes nothing. It never grants a permit again.
var permitExtendScript = driver.NewScript(nodeNow + dropEnded + spanLeases + `
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) <= now then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
spanLeases(KEYS[1], {})
return 1
`)

// permitReleaseScript gives permit ARGV[1] back and returns 1 if it was
// held, 0 otherwise; a permit given back is announced to the waiters.
var permitReleaseScript = driver.NewScript(announce + nodeNow + dropEnded + spanLeases + `
local n = redis.call('ZREM', KEYS[1], ARGV[1])
spanLeases(KEYS[1], {})
if n > 0 then announce(KEYS[1], nil) end
return n
`)
