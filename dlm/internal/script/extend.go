package script

import (
	"strconv"

	"github.com/dlmgo/redlock/dlm/driver"
)

// The extension of each kind of lock is one Lua function, defined once:
// the single scripts ([Extend], [ReadExtend], [PermitExtend]) call it for
// the request's one lock, and [ExtendBatch] for each entry of a batch,
// but for the locks over one key, whose compare-and-extend it runs inline
// (the same two commands, the same refusal of a reserved value; the
// parity cases run both). So a lock extended in a batch is extended
// exactly as it would be alone.

// extendLockFn defines extendLock(first, n, s, ttl), the mutex's
// extension: if every lock key KEYS[first] to KEYS[first+n-1] holds the
// secret s, their TTL is set to ttl ms and it returns 1; otherwise it
// changes nothing and returns 0. It never recreates an expired key. A
// reserved value (the readers' mark, a key handed to a waiter, anything
// beginning with [ReservedPrefix]) is nobody's secret, even when s equals
// it (see owns).
var extendLockFn = `
local function extendLock(first, n, s, ttl)
  if string.sub(s, 1, ` + reservedPrefixLen + `) == '` + ReservedPrefix + `' then return 0 end
  for i = first, first + n - 1 do
    if redis.call('GET', KEYS[i]) ~= s then return 0 end
  end
  for i = first, first + n - 1 do
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
  return 1
end
`

// extendReaderFn defines extendReader(key, set, s, ttl), a reader's
// extension: if the lock key is marked as held by readers and the reader s
// is in the readers' set with a lease not ended, its lease is set to end
// ttl ms from now, the set and the key live as long as the longest lease,
// and it returns 1; otherwise it changes nothing and returns 0. It never
// lets a reader back in. It needs leases' now, dropEnded and spanLeases.
const extendReaderFn = `
local function extendReader(key, set, s, ttl)
  if redis.call('GET', key) ~= '` + ReadersMark + `' then return 0 end
  local sc = redis.call('ZSCORE', set, s)
  if not sc or tonumber(sc) <= now then return 0 end
  redis.call('ZADD', set, now + tonumber(ttl), s)
  spanLeases(set, {key})
  return 1
end
`

// extendPermitFn defines extendPermit(set, s, ttl), a permit's extension:
// if the permit s is in the set of permits with a lease not ended, its
// lease is set to end ttl ms from now, the set lives as long as its longest
// lease, and it returns 1; otherwise it changes nothing and returns 0. It
// never grants a permit again. It needs leases' now, dropEnded and
// spanLeases.
const extendPermitFn = `
local function extendPermit(set, s, ttl)
  local sc = redis.call('ZSCORE', set, s)
  if not sc or tonumber(sc) <= now then return 0 end
  redis.call('ZADD', set, now + tonumber(ttl), s)
  spanLeases(set, {})
  return 1
end
`

// The kinds of an [ExtendBatch] entry: what it extends, which says how
// many of KEYS are its own. A lock over n keys is [BatchLock](n).
const (
	// BatchRead is a reader's lease: its KEYS are the lock key and the
	// readers' set.
	BatchRead = "r"
	// BatchPermit is a permit: its KEY is the set of permits.
	BatchPermit = "p"
	// BatchLeader is a leadership: its KEYS are the election's lock key
	// and its leader key ([LeaderKey]). The leader key is extended with
	// the lock key, and only when the lock key was.
	BatchLeader = "l"
)

// BatchLock returns the kind of an [ExtendBatch] entry that extends a lock
// (a mutex, a write lock, a leadership) over n keys: n, in decimal.
func BatchLock(n int) string {
	if n > 0 && n < len(small) {
		return small[n]
	}
	return strconv.Itoa(n)
}

// BatchCount returns the count of a group of n entries of [ExtendBatch],
// in decimal.
func BatchCount(n int) string {
	if n >= 0 && n < len(small) {
		return small[n]
	}
	return strconv.Itoa(n)
}

// small are the decimals of small numbers, made once.
var small = func() (a [257]string) {
	for i := range a {
		a[i] = strconv.Itoa(i)
	}
	return a
}()

// ExtendBatch extends several locks held on one node in one script run, each
// entry a compare-and-extend of its own with a reply of its own, as the
// single script of its kind would extend it alone ([Extend], [ReadExtend],
// [PermitExtend]): an entry that fails changes nothing of its own lock and
// nothing of the others. On a Redis Cluster every key of a batch must fall
// in one hash slot.
//
// The entries come in groups of one kind and one TTL, so that what they
// share is sent once. KEYS: each entry's keys, entry after entry (the lock
// keys; a reader's lock key and readers' set; a set of permits; an
// election's lock key and leader key). ARGV: for each group, in the same
// order, its kind ([BatchLock], [BatchRead], [BatchPermit], [BatchLeader]), the TTL (ms), the number of its entries n
// ([BatchCount]), then the holder's secret of each of the n entries.
// Reply: an array of one integer per entry, 1 when extended, 0 otherwise.
//
// A group of locks over one key, the common case, runs extendLock's two
// commands inline, the Lua function call being a good part of an entry's
// cost on the node.
var ExtendBatch = driver.NewScript(leases + extendLockFn + extendReaderFn + extendPermitFn + `
local out, o, k, a = {}, 0, 1, 1
while a <= #ARGV do
  local kind, ttl, count = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  if kind == '1' then
    for e = a + 3, a + 2 + count do
      local s = ARGV[e]
      o = o + 1
      if string.sub(s, 1, ` + reservedPrefixLen + `) ~= '` + ReservedPrefix + `' and redis.call('GET', KEYS[k]) == s then
        redis.call('PEXPIRE', KEYS[k], ttl)
        out[o] = 1
      else
        out[o] = 0
      end
      k = k + 1
    end
  else
    for e = a + 3, a + 2 + count do
      local s, r = ARGV[e], 0
      if kind == '` + BatchRead + `' then
        r = extendReader(KEYS[k], KEYS[k + 1], s, ttl)
        k = k + 2
      elseif kind == '` + BatchPermit + `' then
        r = extendPermit(KEYS[k], s, ttl)
        k = k + 1
      elseif kind == '` + BatchLeader + `' then
        r = extendLock(k, 1, s, ttl)
        if r == 1 then redis.call('PEXPIRE', KEYS[k + 1], ttl) end
        k = k + 2
      else
        local n = tonumber(kind)
        r = extendLock(k, n, s, ttl)
        k = k + n
      end
      o = o + 1
      out[o] = r
    end
  end
  a = a + 3 + count
end
return out
`)

// BatchHeader is how many arguments start a group of [ExtendBatch]
// entries: the kind, the TTL, the count.
const BatchHeader = 3
