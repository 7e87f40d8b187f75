package dlm

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// TestLeaseScriptHashes checks that the read lock's and the semaphore's
// scripts carry the SHA-1 of their sources, and that every script of the
// package has a digest of its own.
func TestLeaseScriptHashes(t *testing.T) {
	t.Parallel()
	scripts := map[string]*driver.Script{
		"read acquire": readAcquireScript, "guarded read acquire": guardedReadAcquireScript,
		"read extend": readExtendScript, "read release": readReleaseScript,
		"permit acquire": permitAcquireScript, "guarded permit acquire": guardedPermitAcquireScript,
		"permit extend": permitExtendScript, "permit release": permitReleaseScript,
		"acquire": acquireScript, "fenced acquire": fencedAcquireScript,
		"guarded acquire": guardedAcquireScript, "guarded fenced acquire": guardedFencedAcquireScript,
		"fair acquire": fairAcquireScript, "fair fenced acquire": fairFencedAcquireScript,
		"fair guarded acquire": fairGuardedAcquireScript, "fair guarded fenced acquire": fairGuardedFencedAcquireScript,
		"release": releaseScript, "extend": extendScript, "raise fence": raiseFenceScript,
		"fair release": fairReleaseScript, "leave line": leaveLineScript,
	}
	seen := map[string]string{}
	for name, s := range scripts {
		sum := sha1.Sum([]byte(s.Source))
		if got := hex.EncodeToString(sum[:]); got != s.Hash {
			t.Errorf("%s script: Hash = %s; want %s", name, s.Hash, got)
		}
		if other, dup := seen[s.Hash]; dup {
			t.Errorf("%s and %s scripts share the digest %s", name, other, s.Hash)
		}
		seen[s.Hash] = name
	}
}
