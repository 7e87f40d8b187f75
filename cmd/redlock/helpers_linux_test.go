package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// dieWithTest has the kernel kill a redlock process started by a test if
// the test binary dies without cleaning up, as it does when go test's
// -timeout panics.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processRunning reports whether pid is a process that has not exited: a
// zombie, waiting for a parent that may never reap it, has.
func processRunning(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
