package script

// The read lock's readers and the semaphore's permits are leases: members
// of a sorted set scored by the end of their lease (ms, by the node's
// clock). The set, and the read lock's key with it, lives as long as its
// longest lease, so a crashed holder's lease frees itself when it ends.

// dropEnded defines dropEnded(set), which removes the leases that ended from
// set. (ZRANGEBYSCORE and ZREM, the commands the line uses, rather than
// ZREMRANGEBYSCORE: the ACL docs/security.md lists stays the same.)
const dropEnded = zremAll + `
local function dropEnded(set)
  zremAll(set, redis.call('ZRANGEBYSCORE', set, '-inf', now))
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

// leases is what every lease script starts with.
const leases = nodeNow + dropEnded + spanLeases
