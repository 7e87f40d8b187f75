//go:build !linux

package redistest

import "os/exec"

// dieWithParent does nothing where the kernel cannot kill a child when its
// parent dies; cleanup functions stop the servers.
func dieWithParent(*exec.Cmd) {}
