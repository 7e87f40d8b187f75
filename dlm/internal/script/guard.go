package script

import "strconv"

// guardPrelude starts a script under the restart guard (see dlm's
// WithRestartGuard). The last key is the guard key ([GuardKey]), which
// holds the time (ms, by the node's clock) from which the node may count
// toward a quorum: its start time plus ARGV[3] ms, computed from its uptime
// when the key is missing — the first time, after the node lost its data,
// or after the key expired. Until then the script returns -1 and changes
// nothing else.
//
// The invariant: the node is counted no sooner than window after it
// started. INFO's uptime_in_seconds is the difference of the current and
// the start time, each cut to the second, so it can read 1 a millisecond
// after the start: the node started less than uptime+1 s ago, and the
// start time the script takes is that latest one, now - (uptime-1) s. A
// node that lost its data is counted between window and window rounded up
// to the second plus 1 s after it started
// (TestRestartGuardNotSoonerThanWindow).
//
// Every run sets the guard key's TTL to the time left until that moment
// plus the window: a key locked within the last window keeps its guard key,
// so a node restarted with its data is counted at once, and a key left
// unused for a window leaves nothing behind. A guard key that expired is
// computed again from the uptime, which gives the same moment (to within
// the second the uptime is counted in) while the node has not restarted
// (passed, so the node counts) and a later one after a restart: the guard
// never counts a node sooner than without the TTL.
var guardPrelude = announce + nodeNow + guardCheck(3)

// guardCheck is the guard's check, for a script that has defined clock()
// ([nodeNow], [lazyNow]), with the window in ARGV[i].
func guardCheck(i int) string {
	return `clock()
local window = tonumber(ARGV[` + strconv.Itoa(i) + `])
local safe = tonumber(redis.call('GET', KEYS[#KEYS]) or '-1')
if safe < 0 then
  local up = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)'))
  safe = now - (up - 1) * 1000 + window
end
redis.call('SET', KEYS[#KEYS], safe, 'PX', math.max(safe - now, 0) + window)
if now < safe then return -1 end
`
}
