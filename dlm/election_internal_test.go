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
	t.Parallel()
	sum := sha1.Sum([]byte(leaderScript.Source))
	if got := hex.EncodeToString(sum[:]); got != leaderScript.Hash {
		t.Errorf("leader script: Hash = %s; want %s", leaderScript.Hash, got)
	}
}

// TestScriptNames checks that the scripts memlock runs are registered under
// their own names, and that the key names memlock shares with dlm's
// scripts (wake channel, readers' mark, writer's intent) are dlm's.
func TestScriptNames(t *testing.T) {
	t.Parallel()
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
		{readAcquireScript, scriptid.ReadAcquire},
		{guardedReadAcquireScript, scriptid.GuardedReadAcquire},
		{readExtendScript, scriptid.ReadExtend},
		{readReleaseScript, scriptid.ReadRelease},
		{permitAcquireScript, scriptid.PermitAcquire},
		{guardedPermitAcquireScript, scriptid.GuardedPermitAcquire},
		{permitExtendScript, scriptid.PermitExtend},
		{permitReleaseScript, scriptid.PermitRelease},
		{fairAcquireScript, ""},
	} {
		if got := scriptid.Name(tc.s); got != tc.name {
			t.Errorf("scriptid.Name(%s) = %q; want %q", tc.s.Hash, got, tc.name)
		}
	}
	if wakeSuffix != scriptid.WakeSuffix {
		t.Errorf("scriptid.WakeSuffix = %q; want dlm's %q", scriptid.WakeSuffix, wakeSuffix)
	}
	if readersMark != scriptid.ReadersMark || intentSuffix != scriptid.IntentSuffix {
		t.Errorf("scriptid.ReadersMark, IntentSuffix = %q, %q; want dlm's %q, %q", scriptid.ReadersMark, scriptid.IntentSuffix, readersMark, intentSuffix)
	}
}
