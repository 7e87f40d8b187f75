package wake

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// idBytes is the size of a waiter id's random part: 128 bits, as a lock
// holder's secret.
const idBytes = 16

// IDLen is the length of a waiter id made by [NewID]: idBytes in unpadded
// base64, longer than any release, by which a wake message tells the two
// apart.
const IDLen = (idBytes*8 + 5) / 6

// NewID returns a fresh random waiter id from crypto/rand, in URL-safe
// base64: the id a fair waiter gives [Waker.Watch], and the nodes' lines
// as its place. A release that names it ([script.FairRelease] announces
// it) wakes that waiter alone. The id is not a secret: the release
// announces it.
func NewID() (string, error) {
	var b [idBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dlm: reading random waiter id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
