//go:build !unix

package bench

import "time"

// processCPU cannot read the process's CPU time here: the report shows
// none.
func processCPU() time.Duration { return 0 }
