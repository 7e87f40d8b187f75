package script

import "github.com/dlmgo/redlock/dlm/driver"

// A semaphore keeps, on each node, the sorted set of its permits' secrets
// (the semaphore's key plus [PermitsSuffix]) scored by the end of their
// lease (ms, by the node's clock). Its TTL follows the longest lease, so a
// crashed holder's permit frees itself when its lease ends.

// permitAcquireBody grants permit ARGV[1] for ARGV[2] ms and returns 1 when
// fewer than ARGV[#ARGV-1] (the limit) live permits are held on the node;
// otherwise it returns 0 and changes nothing. A permit already held counts
// as free, so the script is safe to run twice.
const permitAcquireBody = leases + `
dropEnded(KEYS[1])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[#ARGV - 1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
spanLeases(KEYS[1], {})
return 1
`

// PermitAcquire grants a permit when it is held already or fewer than the
// limit live permits are held on the node, and makes the set live as long
// as its longest lease.
//
// KEYS: the set of permits. ARGV: the secret, the TTL (ms), the limit,
// announce's flag (a grant announces nothing). Reply: 1 when granted, 0
// otherwise.
var PermitAcquire = driver.NewScript(announce + permitAcquireBody)

// GuardedPermitAcquire is [PermitAcquire] under the restart guard: KEYS end
// with the guard key, and the window (ms) is ARGV[3], before the limit.
// Reply: -1 while the node may not count yet, otherwise that of
// PermitAcquire.
var GuardedPermitAcquire = driver.NewScript(guardPrelude + permitAcquireBody)

// PermitExtend sets the lease of a permit to end a TTL from now if it is
// still held; otherwise it changes nothing. It never grants a permit again.
//
// KEYS: the set of permits. ARGV: the secret, the TTL (ms). Reply: 1 when
// extended, 0 otherwise.
var PermitExtend = driver.NewScript(leases + extendPermitFn + `
return extendPermit(KEYS[1], ARGV[1], ARGV[2])
`)

// PermitRelease gives a permit back; a permit given back is announced to
// the waiters.
//
// KEYS: the set of permits. ARGV: the secret, announce's flag. Reply: 1
// when the permit was held, 0 otherwise.
var PermitRelease = driver.NewScript(announce + leases + `
local n = redis.call('ZREM', KEYS[1], ARGV[1])
spanLeases(KEYS[1], {})
if n > 0 then broadcast(KEYS[1], nil) end
return n
`)
