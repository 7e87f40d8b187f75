//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// forwardedSignals are the signals redlock passes on to the command. While
// redlock waits for the lock, they stop the wait instead.
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// signalNames are the names logs give the signals redlock handles.
var signalNames = map[syscall.Signal]string{
	syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGKILL: "SIGKILL",
}

// signalName returns the name of sig, such as "SIGTERM".
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if name, ok := signalNames[s]; ok {
			return name
		}
	}
	return sig.String()
}

// Signals redlock sends to a command whose lock was lost.
var (
	sigTerminate os.Signal = syscall.SIGTERM
	sigKill      os.Signal = syscall.SIGKILL
)

// fromKeyboard reports whether a terminal sends sig to its whole
// foreground process group when a key is pressed: Ctrl-C, Ctrl-\.
func fromKeyboard(sig os.Signal) bool {
	return sig == syscall.SIGINT || sig == syscall.SIGQUIT
}

// configureCommand prepares cmd to run in a process group of its own when
// ownGroup is set, so that signals can reach every process it starts, and to
// be killed when redlock dies (where the system can do that).
func configureCommand(cmd *exec.Cmd, ownGroup bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup}
	dieWithParent(cmd.SysProcAttr)
}

// signalCommand sends sig to the command: to its whole process group when
// it has one of its own, to its process alone otherwise. A command that has
// exited already is not an error.
func signalCommand(p *os.Process, ownGroup bool, sig os.Signal) error {
	var err error
	if ownGroup {
		err = syscall.Kill(-p.Pid, sig.(syscall.Signal))
	} else {
		err = p.Signal(sig)
	}
	if errors.Is(err, syscall.ESRCH) || errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// groupAlive reports whether any process is left in the process group
// pgid.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}
