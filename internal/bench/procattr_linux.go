package bench

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in a process group of its own, so that a
// Ctrl-C in the terminal goes to the harness (which then stops the servers)
// and not to the servers, and has the kernel kill it if the harness dies
// without stopping it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
