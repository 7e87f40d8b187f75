package dlm

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/scriptid"
)

// TestLeaderScriptHash checks the leader script's digest against its source.
func TestLeaderScriptHash(t *testing.T) {
	sum := sha1.Sum([]byte(leaderScript.Source))
	if got := hex.EncodeToString(sum[:]); got != leaderScript.Hash {
		t.Errorf("leader script: Hash = %s; want %s", leaderScript.Hash, got)
	}
}

// TestScriptNames checks that the scripts memlock runs are registered under
// their own names.
func TestScriptNames(t *testing.T) {
	for _, tc := range []struct {
		s    *driver.Script
		name string
	}{
		{acquireScript, scriptid.Acquire},
		{fencedAcquireScript, scriptid.FencedAcquire},
		{guardedAcquireScript, scriptid.GuardedAcquire},
		{guardedFencedAcquireScript, scriptid.GuardedFencedAcquire},
		{releaseScript, scriptid.Release},
		{extendScript, scriptid.Extend},
		{raiseFenceScript, scriptid.RaiseFence},
		{statusScript, scriptid.Status},
		{leaderScript, scriptid.Leader},
		{fairAcquireScript, ""},
	} {
		if got := scriptid.Name(tc.s); got != tc.name {
			t.Errorf("scriptid.Name(%s) = %q; want %q", tc.s.Hash, got, tc.name)
		}
	}
}
