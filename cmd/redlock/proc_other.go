//go:build !unix

package main

import (
	"errors"
	"os"
	"os/exec"
)

// forwardedSignals are the signals redlock passes on to the command. While
// redlock waits for the lock, they stop the wait instead. Without Unix
// signals, only an interrupt can be caught.
var forwardedSignals = []os.Signal{os.Interrupt}

// Signals redlock sends to a command whose lock was lost: without Unix
// signals, both kill it.
var (
	sigTerminate = os.Kill
	sigKill      = os.Kill
)

// signalName returns the name of sig.
func signalName(sig os.Signal) string { return sig.String() }

// fromKeyboard reports whether a console sends sig to every process
// attached to it: an interrupt.
func fromKeyboard(sig os.Signal) bool { return sig == os.Interrupt }

// configureCommand does nothing without Unix process groups.
func configureCommand(*exec.Cmd, bool) {}

// signalCommand sends sig to the command's process.
func signalCommand(p *os.Process, _ bool, sig os.Signal) error {
	if err := p.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// groupAlive reports false: there are no process groups to wait for.
func groupAlive(int) bool { return false }

// inForeground reports false: there is no terminal job control.
func inForeground() bool { return false }

// terminalWidth returns 0: the width is unknown.
func terminalWidth(*os.File) int { return 0 }
