//go:build unix

package bench

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time, user and system, this process has used
// so far (getrusage RUSAGE_SELF), or 0 when it cannot tell. The
// redis-server processes are others: their time is not counted.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
