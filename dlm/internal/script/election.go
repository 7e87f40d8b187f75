package script

import "github.com/dlmgo/redlock/dlm/driver"

// Leader reads an election's lock key, whose value is the leader's secret,
// ':' and its value, without revealing the secret: the digest tells
// holders apart.
//
// The key's value is untrusted: anyone who may write under the key prefix
// can store a value of any size there. Leader measures it (STRLEN) before
// it reads it, and never reads, hashes or returns a value longer than
// ARGV[1] bytes, so that what a reply carries, and what each read costs
// the node and the observer, stays bounded whatever the key holds.
//
// KEYS: the lock key. ARGV: the longest value a candidate's key can hold
// (a secret, ':' and the longest leader value). Reply: an empty array when
// the key is absent; {the value's length} when it is longer than ARGV[1];
// otherwise {SHA-1 of the key's value in hex, the value after its first
// ':' ("" without one), the key's PTTL in ms}. A key that holds no
// candidate's secret (a key a release handed on to the next candidate,
// [ReservedFor]) reads as absent: nobody leads there.
var Leader = driver.NewScript(`
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[1]) then return {n} end
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, ` + reservedPrefixLen + `) == '` + ReservedPrefix + `' then return {} end
local i = string.find(v, ':', 1, true)
local value = ''
if i then value = string.sub(v, i + 1) end
return {redis.sha1hex(v), value, redis.call('PTTL', KEYS[1])}
`)
