package script

// What is announced on a wake channel: the scripts announce grants and
// releases (see announce), the in-memory node likewise, and dlm's waker
// passes WakeAll to its own watchers. A fair waiter's id, announced by
// [FairRelease], is a release for that waiter alone.
const (
	// WakeGrant announces a grant of the key: waiters need not try again
	// before its release.
	WakeGrant = "t"
	// WakeRelease, followed by the number of clients listening on the
	// channel in decimal, announces a release to every waiter.
	WakeRelease = "r"
	// WakeAll announces a release to every waiter, without a count: the
	// fair release's when no waiter is in line, and dlm's waker's own to
	// the watchers of a channel subscribed again after a failure.
	WakeAll = ""
)

// Values of announce's flag, the last argument of the scripts that
// announce: its first character says whether the node announces, and how.
const (
	// AnnounceQuiet asks for no announcement.
	AnnounceQuiet = "0"
	// AnnounceLoud asks for announcements by PUBLISH.
	AnnounceLoud = "1"
	// AnnounceSharded asks for announcements by SPUBLISH, on a node that
	// is a Redis Cluster.
	AnnounceSharded = "2"
)

// WriterWaits, after announce's flag, marks the attempt of a writer that
// will try again: refused because readers hold a key, the acquire scripts
// record its intent there ([IntentKey]).
const WriterWaits = "w"

// announce starts the scripts that announce grants and releases. It defines
// announce(key, payload), which publishes on key's wake channel: payload,
// or when it is nil WakeRelease and the channel's number of subscribers,
// which waiters use to spread their attempts (and then only when anyone
// listens). It publishes only when the script's last argument starts with
// AnnounceLoud or AnnounceSharded: the caller asks two nodes at most to
// announce, since every waiter listens on every node. AnnounceSharded is
// for a node that is a Redis Cluster: there the channel is a shard channel
// (SPUBLISH, PUBSUB SHARDNUMSUB), which lives on the master of the key's
// slot, like the key, so a release reaches that master's subscribers only
// instead of every master of the cluster. An ACL without PUBSUB or PUBLISH
// (SPUBLISH) only silences it.
//
// It also defines readersHold(key, value), which an acquire refused by
// value calls: when value is ReadersMark (readers hold the key) and the
// flag ends with WriterWaits, it records the writer's intent, which keeps
// new readers out for the writer's TTL or until a writer obtains the key;
// and clearIntent(key), which a grant calls to delete that intent (reading
// it first, so that a mutex without read locks needs no DEL to be
// granted). Both read the same flag as announce.
const announce = `
local flag = ARGV[#ARGV]
local mode = string.sub(flag, 1, 1)
local loud = mode == '` + AnnounceLoud + `' or mode == '` + AnnounceSharded + `'
local pub, numsub = 'PUBLISH', 'NUMSUB'
if mode == '` + AnnounceSharded + `' then pub, numsub = 'SPUBLISH', 'SHARDNUMSUB' end
local function readersHold(k, v)
  if v == '` + ReadersMark + `' and string.sub(flag, 2, 2) == '` + WriterWaits + `' then
    redis.call('SET', k .. '` + IntentSuffix + `', '1', 'PX', ARGV[2])
  end
end
local function clearIntent(k)
  if redis.call('GET', k .. '` + IntentSuffix + `') then
    redis.call('DEL', k .. '` + IntentSuffix + `')
  end
end
local function announce(k, payload)
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
`
