//go:build !linux

package bench

import "os/exec"

// setProcAttr does nothing outside Linux: the harness stops its servers on
// exit and on Ctrl-C, but a crash may leave them running.
func setProcAttr(*exec.Cmd) {}
