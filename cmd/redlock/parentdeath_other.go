//go:build unix && !linux

package main

import "syscall"

// dieWithParent does nothing where the kernel cannot signal a child when its
// parent dies: a command then outlives a redlock killed with SIGKILL.
func dieWithParent(*syscall.SysProcAttr) {}
