package script

import "github.com/dlmgo/redlock/dlm/driver"

// Leader reads an election's lock key, whose value is the leader's secret,
// ':' and its value, without revealing the secret: the digest tells
// holders apart.
//
// KEYS: the lock key. ARGV: none. Reply: an empty array when the key is
// absent, otherwise {SHA-1 of the key's value in hex, the value after its
// first ':' ("" without one), the key's PTTL in ms}.
var Leader = driver.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return {} end
local i = string.find(v, ':', 1, true)
local value = ''
if i then value = string.sub(v, i + 1) end
return {redis.sha1hex(v), value, redis.call('PTTL', KEYS[1])}
`)
