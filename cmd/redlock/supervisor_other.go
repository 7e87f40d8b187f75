//go:build !linux

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// newSupervisor reports errors.ErrUnsupported: only on Linux does a
// supervisor run the command (see superviseMain there).
func newSupervisor(*exec.Cmd, bool, time.Duration) (*exec.Cmd, *os.File, error) {
	return nil, nil, errors.ErrUnsupported
}

// readStarted is not called without a supervisor.
func readStarted(*os.File, string) (int, error) {
	return 0, errSupervisor
}

// superviseMain refuses to run: there is no supervisor here.
func superviseMain(_ []string, stderr io.Writer) int {
	return usageError(stderr, "", fmt.Errorf("unknown command %q: the commands are run, status, ls, unlock, elect, version and help", superviseCommand))
}
