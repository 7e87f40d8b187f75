package script

import "strings"

// What is announced on a lock key's wake channels. A waiter of the mutex
// (and of an election) is woken alone: the release that frees a key hands it
// to the head of the key's line of waiters, and names that waiter, by its id,
// on the channel of its manager ([ManagerChannel]). Readers, permits'
// waiters and observers of an election listen on the key's broadcast channel
// ([WakeChannel]), which carries the rest.
const (
	// WakeGrant, on the broadcast channel, announces a grant of an
	// election's key: observers read the leader again.
	WakeGrant = "t"
	// WakeRelease, followed by the number of clients listening on the
	// broadcast channel in decimal, announces a release that handed the key
	// to no waiter of the line: to readers and permits' waiters, to
	// observers, and to waiters of the previous version.
	WakeRelease = "r"
	// WakeAll announces a release to every waiter, without a count: dlm's
	// waker passes it to its own watchers when a subscription was made
	// again after a failure, since a release may have gone unheard.
	WakeAll = ""
)

// Flag is announce's flag, the last argument of every script that
// announces: whether the node publishes, on which kind of channel, whether
// the attempt is that of a writer that will try again (refused because
// readers hold a key, the acquire scripts then record its intent there,
// [IntentKey]). [Flag.Arg] and [ParseFlag] are its one encoding, for dlm
// and memlock; the Lua of announce reads the same characters.
type Flag struct {
	Mode        Mode
	WriterWaits bool
}

// Mode is how a node announces.
type Mode uint8

// The modes of a [Flag].
const (
	// Quiet asks for no announcement: a key is freed, never handed on.
	Quiet Mode = iota
	// Loud asks for announcements by PUBLISH.
	Loud
	// Sharded asks for announcements by SPUBLISH, on a node that is a
	// Redis Cluster.
	Sharded
	// QuietSharded is Quiet on a node that is a Redis Cluster: nothing is
	// published, and the listeners a script counts are those of the
	// shard channels (PUBSUB SHARDNUMSUB), where the cluster's clients
	// listen.
	QuietSharded
)

// The characters of a flag: the mode's, then writerWaits or nothing.
const (
	quietArg        = "0"
	loudArg         = "1"
	shardedArg      = "2"
	quietShardedArg = "3"
	writerWaits     = "w"
)

// flagArgs holds every flag's encoding, by mode and WriterWaits, so that a
// request's flag costs no allocation.
var flagArgs = func() (a [4][2]string) {
	for m, mode := range []string{quietArg, loudArg, shardedArg, quietShardedArg} {
		a[m][0] = mode
		a[m][1] = mode + writerWaits
	}
	return a
}()

// Arg returns f as the scripts' last argument. A Mode out of range is
// Quiet.
func (f Flag) Arg() string {
	m := f.Mode
	if int(m) >= len(flagArgs) {
		m = Quiet
	}
	if f.WriterWaits {
		return flagArgs[m][1]
	}
	return flagArgs[m][0]
}

// ParseFlag reads a script's last argument as announce's Lua does: a first
// character other than Loud's, Sharded's or QuietSharded's is Quiet;
// writerWaits counts anywhere after it.
func ParseFlag(arg string) Flag {
	var f Flag
	switch arg[:min(len(arg), 1)] {
	case loudArg:
		f.Mode = Loud
	case shardedArg:
		f.Mode = Sharded
	case quietShardedArg:
		f.Mode = QuietSharded
	}
	rest := arg[min(len(arg), 1):]
	f.WriterWaits = strings.Contains(rest, writerWaits)
	return f
}

// announce starts the scripts that announce. It reads the flag, the
// script's last argument ([Flag]), and defines:
//
//   - broadcast(key, payload), which publishes payload on key's broadcast
//     channel ([WakeChannel]), or, when payload is nil, [WakeRelease] and
//     the channel's number of subscribers, and then only when anyone
//     listens;
//   - wake(key, id), which names the waiter id on the channel of its
//     manager ([ManagerChannel]);
//   - listeners(key), the number of subscribers of key's broadcast channel
//     (0 when PUBSUB fails), whatever the flag's mode asks of the rest;
//   - readersHold(key, value), which an acquire refused by value calls: when
//     value is ReadersMark (readers hold the key) and the flag's
//     WriterWaits is set, it records the writer's intent, which keeps new
//     readers out for the writer's TTL or until a writer's release (a grant
//     leaves it; set by an earlier attempt with the same TTL, it ends before
//     the grant's TTL does);
//   - heard(key, left), which a refusal that found listeners on key's
//     broadcast channel, or a reader's, calls to mark them
//     ([ListenKey]) for left ms, the PTTL of the key that refused, and
//     ARGV[2], the caller's TTL, more: while the mark lives a release of
//     the key announces itself there ([Release]);
//   - released(key), which a release that freed key and handed it to
//     nobody calls: when the flag is loud, it deletes the mark of
//     listeners (they are woken, and a refused one marks itself again)
//     and broadcasts the release;
//   - clearIntent(key), which a release calls to delete that intent
//     (reading it first, so that a mutex without read locks needs no DEL
//     to be released), but not the release of a waiting writer's failed
//     attempt, whose flag has WriterWaits.
//
// broadcast and wake publish only when the flag is Loud or Sharded. Sharded
// and QuietSharded are for a node that is a Redis Cluster: there the
// channels are shard channels (SPUBLISH, PUBSUB SHARDNUMSUB), which live on
// the master of the key's slot, like the key, so a release reaches that
// master's subscribers only instead of every master of the cluster, and
// listeners counts theirs, also when the flag is quiet. An ACL without
// PUBSUB or PUBLISH (SPUBLISH) only silences them.
var announce = `
local flag = ARGV[#ARGV]
local mode = string.sub(flag, 1, 1)
local loud = mode == '` + loudArg + `' or mode == '` + shardedArg + `'
local writerWaits = string.find(flag, '` + writerWaits + `', 2, true) ~= nil
local pub, numsub = 'PUBLISH', 'NUMSUB'
if mode == '` + shardedArg + `' or mode == '` + quietShardedArg + `' then pub, numsub = 'SPUBLISH', 'SHARDNUMSUB' end
local function readersHold(k, v)
  if v == '` + ReadersMark + `' and writerWaits then
    redis.call('SET', k .. '` + IntentSuffix + `', '1', 'PX', ARGV[2])
  end
end
local function heard(k, left)
  redis.call('SET', k .. '` + ListenSuffix + `', '1', 'PX', left + tonumber(ARGV[2]))
end
local function clearIntent(k)
  if redis.call('GET', k .. '` + IntentSuffix + `') then
    redis.call('DEL', k .. '` + IntentSuffix + `')
  end
end
local function broadcast(k, payload)
  if not loud then return end
  local ch = k .. '` + WakeSuffix + `'
  if payload then
    redis.pcall(pub, ch, payload)
    return
  end
  local subs = redis.pcall('PUBSUB', numsub, ch)
  local listening = type(subs) == 'table' and tonumber(subs[2]) or nil
  if listening == 0 then return end
  redis.pcall(pub, ch, '` + WakeRelease + `' .. (listening or 0))
end
local function released(k)
  if not loud then return end
  redis.call('DEL', k .. '` + ListenSuffix + `')
  broadcast(k, nil)
end
local function listeners(k)
  local subs = redis.pcall('PUBSUB', numsub, k .. '` + WakeSuffix + `')
  return type(subs) == 'table' and tonumber(subs[2]) or 0
end
local function wake(k, id)
  if not loud then return end
  redis.pcall(pub, k .. '` + WakeSuffix + `:' .. string.sub(id, 1, ` + managerIDLenLua + `), id)
end
`

// waitsLua sets waits: the flag's WriterWaits. A release whose flag has it
// is a waiting writer's failed attempt, which keeps the writer's intent.
const waitsLua = `local waits = writerWaits
`
