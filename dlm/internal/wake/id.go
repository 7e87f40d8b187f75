package wake

import "github.com/dlmgo/redlock/dlm/internal/script"

// A waiter's id is its manager's id ([script.ManagerIDLen] characters)
// followed by a part of its own, [script.WaiterIDLen] characters in all,
// of the URL-safe base64 alphabet. The releases name a waiter on the
// channel of its manager ([script.ManagerChannel]), so that one manager
// hears only what is meant for its own waiters.

// ValidManagerID reports whether id can be a manager's id.
func ValidManagerID(id string) bool { return len(id) == script.ManagerIDLen && isID(id) }

// ValidWaiterID reports whether id can be a waiter's id.
func ValidWaiterID(id string) bool { return len(id) == script.WaiterIDLen && isID(id) }

// isID reports whether every byte of s belongs to the URL-safe base64
// alphabet.
func isID(s string) bool {
	for i := range len(s) {
		if !isIDByte(s[i]) {
			return false
		}
	}
	return true
}

// isIDByte reports whether c belongs to the URL-safe base64 alphabet.
func isIDByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
