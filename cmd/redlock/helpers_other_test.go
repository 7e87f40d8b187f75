//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// dieWithTest does nothing where the kernel cannot kill a child with its
// parent: the cleanup of each test kills its processes.
func dieWithTest(*exec.Cmd) {}

// processRunning reports whether pid is a process, zombies included.
func processRunning(pid int) bool { return syscall.Kill(pid, 0) == nil }
