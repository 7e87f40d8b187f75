package dlm

import "github.com/dlmgo/redlock/dlm/internal/script"

// wakeKind says what a wake message announces.
type wakeKind uint8

const (
	// wakeTaken: the key was granted; waiters need not try again before
	// its release.
	wakeTaken wakeKind = iota + 1
	// wakeAny: the key was released, for every waiter to try again.
	wakeAny
	// wakeFair: the key was released for the fair waiter named by
	// wakeMsg.id alone.
	wakeFair
)

// Bounds of a wake message's fields.
const (
	// maxCountDigits is the most digits a release's count may have: any
	// such count fits an int64, whatever its digits.
	maxCountDigits = 18
	// maxListening caps a release's count of listening clients, far above
	// what any server serves (Redis' maxclients defaults to 10000). Only
	// [watcher.spread] reads the count, and it waits maxSpread at most.
	maxListening = 1 << 20
)

// fairIDLen is the length of a fair waiter's id, drawn by [newSecret]:
// secretBytes in unpadded base64, longer than any release.
const fairIDLen = (secretBytes*8 + 5) / 6

// wakeMsg is a wake message, as [parseWake] reads it.
type wakeMsg struct {
	kind wakeKind
	// listening is a release's count of clients listening on the channel,
	// capped at maxListening; 0 when the release gave none.
	listening int64
	id        string // the fair waiter's id, for wakeFair
}

// parseWake reads the payload of a message heard on a wake channel. Any
// client allowed to publish there may have sent it, so every field is
// checked and bounded. It accepts exactly this grammar, of ASCII bytes:
//
//	payload = grant / all / release / fair-id
//	grant   = "t"                    ; script.WakeGrant
//	all     = ""                     ; script.WakeAll: a release without a count
//	release = "r" 1*18DIGIT          ; script.WakeRelease and the listeners' count
//	fair-id = 22(ALPHA / DIGIT / "-" / "_")  ; a fair waiter's id
//
// A release's count may have leading zeros; above maxListening it reads as
// maxListening. It reports false, and a zero wakeMsg, for anything else:
// a sign, a count too long, bytes outside the grammar, any other length.
// Its work is bounded by the grammar, not by the payload's length.
func parseWake(payload string) (wakeMsg, bool) {
	switch {
	case payload == script.WakeGrant:
		return wakeMsg{kind: wakeTaken}, true
	case payload == script.WakeAll:
		return wakeMsg{kind: wakeAny}, true
	case len(payload) == fairIDLen:
		for i := range len(payload) {
			if !isIDByte(payload[i]) {
				return wakeMsg{}, false
			}
		}
		return wakeMsg{kind: wakeFair, id: payload}, true
	case len(payload) > len(script.WakeRelease) && len(payload) <= len(script.WakeRelease)+maxCountDigits && payload[:len(script.WakeRelease)] == script.WakeRelease:
		var n int64
		for i := len(script.WakeRelease); i < len(payload); i++ {
			c := payload[i]
			if c < '0' || c > '9' {
				return wakeMsg{}, false
			}
			n = n*10 + int64(c-'0') // 18 digits cannot overflow
		}
		return wakeMsg{kind: wakeAny, listening: min(n, maxListening)}, true
	}
	return wakeMsg{}, false
}

// isIDByte reports whether c belongs to the URL-safe base64 alphabet of a
// fair waiter's id.
func isIDByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
