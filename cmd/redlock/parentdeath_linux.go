package main

import "syscall"

// dieWithParent has the kernel kill the command if redlock dies without
// ending it (SIGKILL, a crash): the lock would expire under a command still
// running. The kernel sends the signal when the thread that started the
// command ends, so that thread must live as long as the command:
// [startChild] locks it.
func dieWithParent(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
