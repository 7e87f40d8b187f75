package dlm

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// tokenBytes is the size of a holder's random token: 128 bits.
const tokenBytes = 16

// newToken returns a fresh random token from crypto/rand, in URL-safe base64.
func newToken() (string, error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dlm: reading random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
