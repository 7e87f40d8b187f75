//go:build !unix

package bench

import "time"

// sharedNow reads the wall clock, the one clock every process reads alike
// here: a clock step during a run misplaces the records of the processes
// that mapped it on either side of the step.
func sharedNow() (time.Duration, error) { return time.Duration(time.Now().UnixNano()), nil }
