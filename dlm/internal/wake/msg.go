package wake

import "github.com/dlmgo/redlock/dlm/internal/script"

// What the wake channels carry (see package script's announce): on a lock
// key's broadcast channel ([script.WakeChannel]), grants of an election's
// key ([script.WakeGrant]) and releases that handed the key to no waiter
// ([script.WakeRelease] and a count, or [script.WakeAll]); on a manager's
// channel ([script.ManagerChannel]), the id of the waiter a release handed
// the key to. The waker passes [script.WakeAll] to its own watchers after a
// subscription failed, since releases may have gone unheard meanwhile.

// Bounds of a wake message's fields.
const (
	// maxCountDigits is the most digits a release's count may have: any
	// such count fits an int64, whatever its digits.
	maxCountDigits = 18
	// maxListening caps a release's count of listening clients, far above
	// what any server serves (Redis' maxclients defaults to 10000). Only
	// [Watcher.spread] reads the count, and it waits maxSpread at most.
	maxListening = 1 << 20
)

// broadcastMsg is a message of a broadcast channel, as [parseBroadcast]
// reads it.
type broadcastMsg struct {
	grant bool // an election's key was granted
	// listening is a release's count of clients listening on the channel,
	// capped at maxListening; 0 when the release gave none.
	listening int64
}

// previousIDLen is the length of the id of a fair waiter of the previous
// release, whose release announced the head of its line by that id on the
// broadcast channel (22 characters of URL-safe base64). The key is free
// then, for whoever asks first: to this release's waiters it is a release.
const previousIDLen = 22

// parseBroadcast reads the payload of a message heard on a broadcast
// channel. Any client allowed to publish there may have sent it, so every
// field is checked and bounded. It accepts exactly this grammar, of ASCII
// bytes:
//
//	payload  = grant / all / release / previous
//	grant    = "t"                   ; script.WakeGrant
//	all      = ""                    ; script.WakeAll: a release without a count
//	release  = "r" 1*18DIGIT         ; script.WakeRelease and the listeners' count
//	previous = 22(ALPHA / DIGIT / "-" / "_")
//	                                 ; the previous release's fair release: a
//	                                 ; release without a count
//
// A release's count may have leading zeros; above maxListening it reads as
// maxListening. It reports false for anything else: a sign, a count too
// long, bytes outside the grammar. Its work is bounded by the grammar, not
// by the payload's length.
func parseBroadcast(payload string) (broadcastMsg, bool) {
	switch {
	case payload == script.WakeGrant:
		return broadcastMsg{grant: true}, true
	case payload == script.WakeAll:
		return broadcastMsg{}, true
	case len(payload) == previousIDLen && isID(payload):
		return broadcastMsg{}, true
	case len(payload) > len(script.WakeRelease) && len(payload) <= len(script.WakeRelease)+maxCountDigits && payload[:len(script.WakeRelease)] == script.WakeRelease:
		var n int64
		for i := len(script.WakeRelease); i < len(payload); i++ {
			c := payload[i]
			if c < '0' || c > '9' {
				return broadcastMsg{}, false
			}
			n = n*10 + int64(c-'0') // 18 digits cannot overflow
		}
		return broadcastMsg{listening: min(n, maxListening)}, true
	}
	return broadcastMsg{}, false
}

// parseNamed reads the payload of a message heard on the channel of the
// manager whose id is manager: the id of one of its waiters, which it
// reports true for. Anything else — another length, bytes outside the id's
// alphabet, another manager's id — it reports false for, at a cost bounded
// by the id's length.
func parseNamed(manager, payload string) (string, bool) {
	if !ValidWaiterID(payload) || payload[:len(manager)] != manager {
		return "", false
	}
	return payload, true
}
