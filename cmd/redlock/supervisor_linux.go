package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// supervisor runs the command under the lock on redlock's behalf, and ends
// the command's processes if redlock dies first.
type supervisor struct {
	group     bool          // it leads the command's process group
	killAfter time.Duration // from SIGTERM to SIGKILL once redlock is gone
	self      int           // its own pid
}

// superviseMain is the supervisor, "redlock __supervise MODE KILL_AFTER
// PATH ARG0 [ARG...]", started by redlock with its link to redlock as file
// descriptor 3: see [newSupervisor]. It runs PATH with ARG0 and the ARGs as
// the command, in its own process group with MODE "group", and returns the
// command's exit code, or 128+N if signal N killed it.
//
// While the command runs, it is a child subreaper: the processes the
// command starts stay its descendants even when their parent exits. The
// signals redlock forwards reach the whole group with MODE "group", the
// supervisor included, which ignores them; with MODE "shared" (the
// foreground of a terminal) redlock sends them to the supervisor, which
// passes them on to the command as redlock would.
//
// If redlock's end of the link closes first — redlock was killed or
// crashed — it sends SIGTERM to its process group with MODE "group" and to
// every process below it, then SIGKILL to those left after KILL_AFTER (at
// once if 0), and exits once none is left.
func superviseMain(args []string, stderr io.Writer) int {
	s := &supervisor{self: os.Getpid()}
	var st syscall.Stat_t
	if len(args) < 4 || (args[0] != modeGroup && args[0] != modeShared) ||
		syscall.Fstat(linkFD, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		fmt.Fprintf(stderr, "redlock: %s is redlock's own, run by redlock run and elect\n", superviseCommand)
		return exitUsage
	}
	d, err := time.ParseDuration(args[1])
	if err != nil || d < 0 {
		fmt.Fprintf(stderr, "redlock: %s: bad time %q\n", superviseCommand, args[1])
		return exitUsage
	}
	s.group, s.killAfter = args[0] == modeGroup, d
	syscall.CloseOnExec(linkFD) // the command does not get it
	return s.run(os.NewFile(linkFD, "redlock"), args[2], args[3:])
}

// run starts the command and waits for it, or for redlock's end.
func (s *supervisor) run(link *os.File, path string, argv []string) int {
	// The command's parent-death signal follows the thread that starts
	// it: this goroutine stays locked to it until the process exits.
	runtime.LockOSThread()
	// Without it (Linux before 3.4) the processes whose parent exits
	// leave the tree, and only the group finds them.
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	sigs := make(chan os.Signal, 16)
	notifySignals(sigs)
	exited := make(chan os.Signal, 1)
	signal.Notify(exited, syscall.SIGCHLD)

	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// Should the supervisor be killed, its command is.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		errno, _ := err.(syscall.Errno)
		fmt.Fprintf(link, "%s %d\n", reportFailed, int(errno))
		return startExitCode(err)
	}
	// If redlock is gone already, the write fails and the read below
	// ends at once.
	fmt.Fprintf(link, "%s %d\n", reportStarted, pid)
	gone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, link)
		close(gone)
	}()
	for {
		select {
		case <-exited:
			if ws, ok := s.reap(pid); ok {
				return waitExitCode(ws)
			}
		case sig := <-sigs:
			// Redlock sends the group's members each their own;
			// the terminal sends Ctrl-C and Ctrl-\ to its foreground
			// group, the command included.
			if !s.group && (!inForeground() || !fromKeyboard(sig)) {
				syscall.Kill(pid, sig.(syscall.Signal))
			}
		case <-gone:
			s.end()
			return exitFailure
		}
	}
}

// reap reaps the exited children, the command and orphans handed to the
// supervisor, and returns the command's status once it has exited.
func (s *supervisor) reap(pid int) (syscall.WaitStatus, bool) {
	var cmd syscall.WaitStatus
	found := false
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if wpid <= 0 {
			return cmd, found
		}
		if wpid == pid {
			cmd, found = ws, true
		}
	}
}

// end ends every process below the supervisor, and those of its group:
// SIGTERM, then SIGKILL after killAfter. It returns when none is left.
func (s *supervisor) end() {
	killing := s.killAfter <= 0
	left := s.left()
	if !killing {
		if s.group {
			syscall.Kill(-s.self, syscall.SIGTERM) // the supervisor catches it
		}
		for _, p := range left {
			if !s.group || p.pgrp != s.self {
				syscall.Kill(p.pid, syscall.SIGTERM)
			}
		}
	}
	deadline := time.Now().Add(s.killAfter)
	poll := time.NewTicker(groupPoll)
	defer poll.Stop()
	for len(left) > 0 {
		if killing {
			// One by one: SIGKILL to the group would end the
			// supervisor first. Processes started since the last
			// round get theirs in the next.
			for _, p := range left {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		<-poll.C
		s.reap(0)
		killing = killing || !time.Now().Before(deadline)
		left = s.left()
	}
}

// left returns the processes below the supervisor that have not exited.
func (s *supervisor) left() []procStat {
	var out []procStat
	for _, p := range descendants(processes(), s.self) {
		if !p.zombie() {
			out = append(out, p)
		}
	}
	return out
}

// waitExitCode is the exit code of a process that ended with ws: its own,
// or 128+N when signal N killed it.
func waitExitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ws.ExitStatus()
}
