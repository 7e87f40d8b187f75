package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The supervisor's link to redlock is one end of a socket pair, its file
// descriptor linkFD. Once the command started, the supervisor writes
// "started PID\n" on it, or "failed ERRNO\n" if the command could not start;
// redlock writes nothing. Redlock's end closes when redlock exits, however
// it exits: the supervisor reads that as redlock's end.
const (
	linkFD         = 3
	reportStarted  = "started"
	reportFailed   = "failed"
	maxReportBytes = 64
)

// The supervisor's modes: it leads the command's process group, or shares
// redlock's (in the foreground of a terminal).
const (
	modeGroup  = "group"
	modeShared = "shared"
)

// selfExe names redlock's own executable, even if the file was replaced
// or removed since redlock started.
const selfExe = "/proc/self/exe"

// newSupervisor returns, not started, the supervisor that runs cmd, in a
// process group of its own when ownGroup is set, and redlock's end of the
// link to it. The supervisor runs cmd's path with cmd's arguments, and gets
// cmd's environment, directory and standard streams.
func newSupervisor(cmd *exec.Cmd, ownGroup bool, killAfter time.Duration) (*exec.Cmd, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: socketpair: %w", errSupervisor, err)
	}
	link, theirs := os.NewFile(uintptr(fds[0]), "supervisor"), os.NewFile(uintptr(fds[1]), "redlock")
	mode := modeShared
	if ownGroup {
		mode = modeGroup
	}
	args := append([]string{os.Args[0], superviseCommand, mode, killAfter.String(), cmd.Path}, cmd.Args...)
	sup := &exec.Cmd{
		Path:       selfExe,
		Args:       args,
		Env:        cmd.Env,
		Dir:        cmd.Dir,
		Stdin:      cmd.Stdin,
		Stdout:     cmd.Stdout,
		Stderr:     cmd.Stderr,
		ExtraFiles: []*os.File{theirs},
		// No parent-death signal: the supervisor outlives redlock.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: ownGroup},
	}
	return sup, link, nil
}

// readStarted reads the supervisor's report on link: the pid of the
// command, or the error that kept the command at path from starting. An
// error that wraps errSupervisor means that the supervisor ended, or said
// something else, before it reported.
func readStarted(link *os.File, path string) (int, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(link, maxReportBytes), 16).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("%w: it ended before starting the command", errSupervisor)
	}
	word, arg, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	n, err := strconv.Atoi(arg)
	switch {
	case err != nil || n <= 0:
	case word == reportStarted:
		return n, nil
	case word == reportFailed:
		return 0, &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
	}
	return 0, fmt.Errorf("%w: it reported %q", errSupervisor, line)
}
