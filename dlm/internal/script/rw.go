package script

import "github.com/dlmgo/redlock/dlm/driver"

// The read-write lock keeps, on each node, under the lock's own key:
//
//   - the key itself: a writer's secret (the mutex), or [ReadersMark] while
//     readers hold it, with a TTL that ends with the last reader's lease;
//   - the key plus [ReadersSuffix], a sorted set of the readers' secrets
//     scored by the end of their lease (ms, by the node's clock);
//   - the key plus [IntentSuffix], the intent of a writer that waits for
//     the readers to leave: while it exists no new reader is let in.
//
// Every writer script (the mutex's acquire scripts) sees ReadersMark as
// another holder's value and refuses, so writers need nothing else to be
// kept out by readers, and readers are kept out by a writer's secret.

// readAcquireBody lets the reader with secret ARGV[1] in for ARGV[2] ms when
// no writer holds KEYS[1] and none waits (KEYS[3]), and returns 1;
// otherwise it returns 0 and marks that a reader listens on the key's
// broadcast channel (heard, [ListenKey]) until the writer's key, or its
// intent, has expired and a TTL more, so that the writer's release
// announces itself there. KEYS[2] is the readers' set.
// A reader already in counts as free, so the script is safe to run twice.
const readAcquireBody = leases + `
local v = redis.call('GET', KEYS[1])
if v and v ~= '` + ReadersMark + `' then
  heard(KEYS[1], math.max(redis.call('PTTL', KEYS[1]), 0))
  return 0
end
if redis.call('GET', KEYS[3]) and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  heard(KEYS[1], math.max(redis.call('PTTL', KEYS[3]), 0))
  return 0
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
redis.call('SET', KEYS[1], '` + ReadersMark + `')
spanLeases(KEYS[2], {KEYS[1]})
return 1
`

// ReadAcquire lets a reader in when no writer holds the lock key and none
// waits, or when the reader is in already; it then marks the key with
// [ReadersMark] and makes the key and the readers' set live as long as the
// longest lease.
//
// KEYS: the lock key, the readers' set, the writer's intent. ARGV: the
// secret, the TTL (ms), announce's flag (a grant announces nothing). Reply:
// 1 when let in, 0 otherwise (marking the listener). A key a release handed to a writer of its
// line (see [Release]) keeps readers out, as the writer's key would.
var ReadAcquire = driver.NewScript(announce + readAcquireBody)

// GuardedReadAcquire is [ReadAcquire] under the restart guard: KEYS end
// with the guard key, and the window (ms) is ARGV[3], before announce's
// flag. Reply: -1 while the node may not count yet, otherwise that of
// ReadAcquire.
var GuardedReadAcquire = driver.NewScript(guardPrelude + readAcquireBody)

// ReadExtend sets the lease of a reader to end a TTL from now, if the
// reader is still in (the lock key marked, its lease not ended); otherwise
// it changes nothing. It never lets a reader back in.
//
// KEYS: the lock key, the readers' set. ARGV: the secret, the TTL (ms).
// Reply: 1 when extended, 0 otherwise.
var ReadExtend = driver.NewScript(leases + extendReaderFn + `
return extendReader(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
`)

// ReadRelease removes a reader. When the last reader leaves it deletes the
// lock key and hands it on to the head of its line, a writer that waits for
// the readers to leave (see [Release]), or, with nobody in line, announces
// the release on the broadcast channel; the key's TTL otherwise follows the
// longest lease left. A writer's key is never touched. The release of a
// failed attempt is Quiet: it frees the key, and announces nothing.
//
// KEYS: the lock key, the readers' set, the lock key's line ([LineKeys]).
// ARGV: the secret, how long a key handed on stays reserved (ms),
// announce's flag. Reply: 1 when the reader was in, 0 otherwise.
var ReadRelease = driver.NewScript(announce + leases + `local lk = 2
` + lineLua + `
local n = redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('GET', KEYS[1]) ~= '` + ReadersMark + `' then return n end
if spanLeases(KEYS[2], {KEYS[1]}) and not handOn(1, tonumber(ARGV[2])) then released(KEYS[1]) end
return n
`)
