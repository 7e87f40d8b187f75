package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the child if the test binary dies
// without cleaning up, as it does when go test's -timeout panics, so that no
// redis-server outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
