package wake

import "github.com/dlmgo/redlock/dlm/internal/script"

// The wake channel of a lock key ([script.WakeChannel]) carries what the
// scripts announce, and what the in-memory node of package memlock
// announces likewise: grants ([script.WakeGrant]) and releases
// ([script.WakeRelease] and a count, [script.WakeAll], or a fair waiter's
// id, a release for that waiter alone). The waker passes [script.WakeAll]
// to its own watchers after a subscription failed, since releases may have
// gone unheard meanwhile. [Waker.notify] reads them with [parse], which
// tells an id from a release by its length.

// kind says what a wake message announces.
type kind uint8

const (
	// kindGrant: the key was granted; waiters need not try again before its
	// release.
	kindGrant kind = iota + 1
	// kindRelease: the key was released, for every waiter to try again.
	kindRelease
	// kindFair: the key was released for the fair waiter named by msg.id
	// alone.
	kindFair
)

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

// msg is a wake message, as [parse] reads it.
type msg struct {
	kind kind
	// listening is a release's count of clients listening on the channel,
	// capped at maxListening; 0 when the release gave none.
	listening int64
	id        string // the fair waiter's id, for kindFair
}

// parse reads the payload of a message heard on a wake channel. Any client
// allowed to publish there may have sent it, so every field is checked and
// bounded. It accepts exactly this grammar, of ASCII bytes:
//
//	payload = grant / all / release / fair-id
//	grant   = "t"                    ; script.WakeGrant
//	all     = ""                     ; script.WakeAll: a release without a count
//	release = "r" 1*18DIGIT          ; script.WakeRelease and the listeners' count
//	fair-id = 22(ALPHA / DIGIT / "-" / "_")  ; a fair waiter's id
//
// A release's count may have leading zeros; above maxListening it reads as
// maxListening. It reports false, and a zero msg, for anything else: a
// sign, a count too long, bytes outside the grammar, any other length. Its
// work is bounded by the grammar, not by the payload's length.
func parse(payload string) (msg, bool) {
	switch {
	case payload == script.WakeGrant:
		return msg{kind: kindGrant}, true
	case payload == script.WakeAll:
		return msg{kind: kindRelease}, true
	case len(payload) == IDLen:
		for i := range len(payload) {
			if !isIDByte(payload[i]) {
				return msg{}, false
			}
		}
		return msg{kind: kindFair, id: payload}, true
	case len(payload) > len(script.WakeRelease) && len(payload) <= len(script.WakeRelease)+maxCountDigits && payload[:len(script.WakeRelease)] == script.WakeRelease:
		var n int64
		for i := len(script.WakeRelease); i < len(payload); i++ {
			c := payload[i]
			if c < '0' || c > '9' {
				return msg{}, false
			}
			n = n*10 + int64(c-'0') // 18 digits cannot overflow
		}
		return msg{kind: kindRelease, listening: min(n, maxListening)}, true
	}
	return msg{}, false
}

// isIDByte reports whether c belongs to the URL-safe base64 alphabet of a
// fair waiter's id.
func isIDByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
