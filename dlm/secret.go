package dlm

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/dlmgo/redlock/dlm/internal/script"
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

// secretLen is the length of a secret newSecret makes: 16 bytes in
// unpadded base64.
var secretLen = base64.RawURLEncoding.EncodedLen(secretBytes)

// checkSecret checks that s, a secret from outside (a [Handle]), has the
// shape of one newSecret makes: secretLen characters of the URL-safe base64
// alphabet that decode to secretBytes bytes, the unused bits of the last
// zero. A reserved value never passes. The error never quotes s.
func checkSecret(s string) error {
	if s == "" {
		return fmt.Errorf("%w: Handle has no secret", ErrInvalid)
	}
	if strings.HasPrefix(s, script.ReservedPrefix) {
		return fmt.Errorf("%w: Handle's secret is a reserved value, not a holder's secret", ErrInvalid)
	}
	if len(s) != secretLen {
		return fmt.Errorf("%w: Handle's secret has %d bytes; want %d", ErrInvalid, len(s), secretLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: Handle's secret has a byte outside URL-safe base64 at offset %d", ErrInvalid, i)
		}
	}
	if b, err := base64.RawURLEncoding.Strict().DecodeString(s); err != nil || len(b) != secretBytes {
		return fmt.Errorf("%w: Handle's secret is not the base64 of %d bytes", ErrInvalid, secretBytes)
	}
	return nil
}
