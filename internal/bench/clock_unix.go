//go:build unix

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// sharedNow reads CLOCK_MONOTONIC, the time since boot that every process
// of the machine reads alike (unlike Go's monotonic readings, which are
// only comparable within a process), and that no clock step moves.
func sharedNow() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}
