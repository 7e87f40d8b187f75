package script

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// all names every script of the package.
var all = map[string]*driver.Script{
	"Acquire": Acquire, "FencedAcquire": FencedAcquire,
	"GuardedAcquire": GuardedAcquire, "GuardedFencedAcquire": GuardedFencedAcquire,
	"Release": Release, "Extend": Extend, "RaiseFence": RaiseFence, "ReadFence": ReadFence, "Status": Status,
	"ReadAcquire": ReadAcquire, "GuardedReadAcquire": GuardedReadAcquire,
	"ReadExtend": ReadExtend, "ReadRelease": ReadRelease,
	"PermitAcquire": PermitAcquire, "GuardedPermitAcquire": GuardedPermitAcquire,
	"PermitExtend": PermitExtend, "PermitRelease": PermitRelease, "ExtendBatch": ExtendBatch,
	"Leave":  Leave,
	"Leader": Leader, "SetLeader": SetLeader, "ServerID": ServerID, "ServerProbe": ServerProbe,
}

// TestScriptHashes checks that every script carries the SHA-1 of its
// source, and that no two scripts share a digest, so that a node's script
// cache never runs one for another.
func TestScriptHashes(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for name, s := range all {
		sum := sha1.Sum([]byte(s.Source))
		if got := hex.EncodeToString(sum[:]); got != s.Hash {
			t.Errorf("%s: Hash = %s; want %s", name, s.Hash, got)
		}
		if other, dup := seen[s.Hash]; dup {
			t.Errorf("%s and %s share the digest %s", name, other, s.Hash)
		}
		seen[s.Hash] = name
	}
}

// TestFenceLimitLua checks that the scripts' text of FenceLimit is its value.
func TestFenceLimitLua(t *testing.T) {
	if got := strconv.FormatInt(FenceLimit, 10); got != fenceLimitLua {
		t.Errorf("fenceLimitLua = %s; want %s", fenceLimitLua, got)
	}
}
