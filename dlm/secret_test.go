package dlm

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestSecret checks that secrets are 128 random bits, distinct every time.
func TestSecret(t *testing.T) {
	t.Parallel()
	seen := make(map[string]bool, 1000)
	for i := 0; i < 1000; i++ {
		tok, err := newSecret()
		if err != nil {
			t.Fatalf("newSecret() = %v", err)
		}
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(b) != 16 {
			t.Fatalf("newSecret() = %q: decodes to %d bytes, %v; want 16 bytes", tok, len(b), err)
		}
		if seen[tok] {
			t.Fatalf("newSecret() returned %q twice in %d calls", tok, i+1)
		}
		seen[tok] = true
	}
}

// TestScriptHashes checks that the scripts' digests match their sources and
// that the three scripts are distinct (the fake node tells them apart by
// digest).
func TestScriptHashes(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*struct{ src, hash string }{
		"acquire": {script.Acquire.Source, script.Acquire.Hash},
		"release": {script.Release.Source, script.Release.Hash},
		"extend":  {script.Extend.Source, script.Extend.Hash},
	} {
		sum := sha1.Sum([]byte(s.src))
		if got := hex.EncodeToString(sum[:]); got != s.hash {
			t.Errorf("%s script: Hash = %s; want %s", name, s.hash, got)
		}
	}
	if script.Acquire.Hash == script.Release.Hash || script.Release.Hash == script.Extend.Hash || script.Acquire.Hash == script.Extend.Hash {
		t.Errorf("two scripts share a digest")
	}
}
