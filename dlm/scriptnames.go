package dlm

import (
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/scriptid"
)

// The scripts the in-memory node of package memlock runs in Go, registered
// by digest. The fair scripts are not among them: memlock refuses
// [WithFairness].
func init() {
	for name, s := range map[string]*driver.Script{
		scriptid.Acquire:              acquireScript,
		scriptid.FencedAcquire:        fencedAcquireScript,
		scriptid.GuardedAcquire:       guardedAcquireScript,
		scriptid.GuardedFencedAcquire: guardedFencedAcquireScript,
		scriptid.Release:              releaseScript,
		scriptid.Extend:               extendScript,
		scriptid.RaiseFence:           raiseFenceScript,
		scriptid.Status:               statusScript,
		scriptid.Leader:               leaderScript,
		scriptid.ReadAcquire:          readAcquireScript,
		scriptid.GuardedReadAcquire:   guardedReadAcquireScript,
		scriptid.ReadExtend:           readExtendScript,
		scriptid.ReadRelease:          readReleaseScript,
		scriptid.PermitAcquire:        permitAcquireScript,
		scriptid.GuardedPermitAcquire: guardedPermitAcquireScript,
		scriptid.PermitExtend:         permitExtendScript,
		scriptid.PermitRelease:        permitReleaseScript,
		scriptid.ServerID:             serverIDScript,
	} {
		scriptid.Register(name, s)
	}
}
