package dlm

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// secretBytes is the size of a holder's random secret: 128 bits.
const secretBytes = 16

// newSecret returns a fresh random secret from crypto/rand, in URL-safe
// base64.
func newSecret() (string, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dlm: reading random secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
