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

// Flag is announce's flag, the last argument of every script that
// announces: whether the node publishes grants and releases, on which kind
// of channel, and whether the attempt is that of a writer that will try
// again (refused because readers hold a key, the acquire scripts then
// record its intent there, [IntentKey]). [Flag.Arg] and [ParseFlag] are its
// one encoding, for dlm and memlock; the Lua of announce reads the same
// characters.
type Flag struct {
	Mode        Mode
	WriterWaits bool
}

// Mode is how a node announces.
type Mode uint8

// The modes of a [Flag].
const (
	// Quiet asks for no announcement.
	Quiet Mode = iota
	// Loud asks for announcements by PUBLISH.
	Loud
	// Sharded asks for announcements by SPUBLISH, on a node that is a
	// Redis Cluster.
	Sharded
)

// The characters of a flag: the mode's, then writerWaits or nothing.
const (
	quietArg    = "0"
	loudArg     = "1"
	shardedArg  = "2"
	writerWaits = "w"
)

// flagArgs holds every flag's encoding, so that a request's flag costs no
// allocation.
var flagArgs = [...][2]string{
	Quiet:   {quietArg, quietArg + writerWaits},
	Loud:    {loudArg, loudArg + writerWaits},
	Sharded: {shardedArg, shardedArg + writerWaits},
}

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
// character other than Loud's or Sharded's is Quiet, and only
// writerWaits as the second character marks a waiting writer.
func ParseFlag(arg string) Flag {
	var f Flag
	switch arg[:min(len(arg), 1)] {
	case loudArg:
		f.Mode = Loud
	case shardedArg:
		f.Mode = Sharded
	}
	f.WriterWaits = arg[min(len(arg), 1):min(len(arg), 2)] == writerWaits
	return f
}

// announce starts the scripts that announce grants and releases. It defines
// announce(key, payload), which publishes on key's wake channel: payload,
// or when it is nil WakeRelease and the channel's number of subscribers,
// which waiters use to spread their attempts (and then only when anyone
// listens). It publishes only when the script's last argument, a [Flag],
// is Loud or Sharded: the caller asks two nodes at most to
// announce, since every waiter listens on every node. Sharded is
// for a node that is a Redis Cluster: there the channel is a shard channel
// (SPUBLISH, PUBSUB SHARDNUMSUB), which lives on the master of the key's
// slot, like the key, so a release reaches that master's subscribers only
// instead of every master of the cluster. An ACL without PUBSUB or PUBLISH
// (SPUBLISH) only silences it.
//
// It also defines readersHold(key, value), which an acquire refused by
// value calls: when value is ReadersMark (readers hold the key) and the
// flag's WriterWaits is set, it records the writer's intent, which keeps
// new readers out for the writer's TTL or until a writer's release (a grant
// leaves it; set by an earlier attempt with the same TTL, it ends before the
// grant's TTL does);
// and clearIntent(key), which a release calls to delete that intent
// (reading it first, so that a mutex without read locks needs no DEL to be
// released), but not the release of a waiting writer's failed attempt,
// whose flag has WriterWaits ([waitsLua]). All read the same flag as
// announce.
const announce = `
local flag = ARGV[#ARGV]
local mode = string.sub(flag, 1, 1)
local loud = mode == '` + loudArg + `' or mode == '` + shardedArg + `'
local pub, numsub = 'PUBLISH', 'NUMSUB'
if mode == '` + shardedArg + `' then pub, numsub = 'SPUBLISH', 'SHARDNUMSUB' end
local function readersHold(k, v)
  if v == '` + ReadersMark + `' and string.sub(flag, 2, 2) == '` + writerWaits + `' then
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

// waitsLua sets waits: the flag's WriterWaits. A release whose flag has it
// is a waiting writer's failed attempt, which keeps the writer's intent.
const waitsLua = `local waits = string.sub(flag, 2, 2) == '` + writerWaits + `'
`
