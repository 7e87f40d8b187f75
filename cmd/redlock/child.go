package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Environment variables redlock sets for the command.
const (
	// envKey holds the lock's key, as given on the command line.
	envKey = "REDLOCK_KEY"
	// envFence holds the fencing token with --fencing, and envGrant the
	// lock's grant id (see dlm.Lock.GrantID); they are removed otherwise,
	// so that a token inherited from an outer redlock is not taken for
	// this lock's.
	envFence = "REDLOCK_FENCE"
	envGrant = "REDLOCK_FENCE_GRANT"
)

// secretEnv are the environment variables redlock reads secrets from:
// REDLOCK_NODES holds the nodes' passwords. The command does not get them
// unless --pass-nodes asks for it: /proc/PID/environ would show them to
// whatever reads the command's, and the command would hand them on.
var secretEnv = []string{"REDLOCK_NODES"}

// superviseCommand is the command by which redlock runs itself as the
// supervisor of a command ([superviseMain]); usage does not list it.
const superviseCommand = "__supervise"

// child is the command running under the lock: on Linux, the supervisor
// that runs it (see [superviseMain]); elsewhere, or if the supervisor cannot
// be started, the command itself.
type child struct {
	cmd      *exec.Cmd
	pid      int           // the command's process id
	ownGroup bool          // the command (or its supervisor) leads a process group of its own
	done     chan struct{} // closed once cmd has exited and been waited for
}

// Errors of a supervisor that failed before it started the command: with
// errSupervisorExec, redlock could not even run it, and starts the command
// directly instead.
var (
	errSupervisor     = errors.New("the command's supervisor failed")
	errSupervisorExec = errors.New("cannot run redlock's own executable")
)

// startChild starts cmd, in a process group of its own when ownGroup is
// set. Where it can, it starts cmd under a supervisor that outlives redlock
// only to end the command's processes if redlock dies: SIGTERM, then
// SIGKILL after killAfter (see [superviseMain]). Otherwise the command is
// started directly, and killed if redlock dies where the system can do
// that, but not the processes it started.
func startChild(cmd *exec.Cmd, ownGroup bool, killAfter time.Duration, log *slog.Logger) (*child, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	sup, link, err := newSupervisor(cmd, ownGroup, killAfter)
	if err == nil {
		var c *child
		if c, err = start(sup, ownGroup, link, cmd.Path); !errors.Is(err, errSupervisorExec) {
			return c, err
		}
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		log.Warn("redlock: starting the command without a supervisor: processes it starts can outlive redlock if redlock is killed", slog.Any("error", err))
	}
	configureCommand(cmd, ownGroup)
	return start(cmd, ownGroup, nil, "")
}

// start starts cmd: the command, or with a link its supervisor, from which
// it then reads the pid of the command at path, or why it could not start.
// The goroutine that starts cmd waits for it, locked to its thread: on Linux
// the kernel signals a process started with [dieWithParent] when the thread
// that started it ends, and Go may end a thread only when a goroutine
// locked to it returns.
func start(cmd *exec.Cmd, ownGroup bool, link *os.File, path string) (*child, error) {
	c := &child{cmd: cmd, ownGroup: ownGroup, done: make(chan struct{})}
	started := make(chan error, 1)
	read := make(chan struct{}) // closed once the supervisor's report is read
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		for _, f := range cmd.ExtraFiles {
			f.Close() // the supervisor's end of the link: it has its own copy
		}
		if err != nil {
			started <- err
			return
		}
		started <- nil
		// The exit status is in cmd.ProcessState; with the standard
		// streams passed as files, Wait has no copying to fail.
		_ = cmd.Wait()
		if link != nil {
			// Closed only now: to the supervisor, its end means that
			// redlock is gone. A command that exits at once may end
			// its supervisor before the report is read.
			<-read
			link.Close()
		}
		close(c.done)
	}()
	err := <-started
	switch {
	case err != nil && link != nil:
		link.Close()
		return nil, fmt.Errorf("%w: %w: %w", errSupervisor, errSupervisorExec, err)
	case err != nil:
		return nil, err
	case link == nil:
		c.pid = cmd.Process.Pid
		return c, nil
	}
	pid, err := readStarted(link, path)
	close(read)
	if err != nil {
		if errors.Is(err, errSupervisor) {
			// Whatever it started dies with it.
			cmd.Process.Kill()
		}
		// Otherwise the command could not start, and the supervisor
		// exits.
		<-c.done
		return nil, err
	}
	c.pid = pid
	return c, nil
}

// signal sends sig to the command, or to its process group.
func (c *child) signal(sig os.Signal) error {
	return signalCommand(c.cmd.Process, c.ownGroup, sig)
}

// exitCode is the command's exit code, once done is closed.
func (c *child) exitCode() int {
	return commandExitCode(c.cmd.ProcessState)
}

// commandEnv returns environ with REDLOCK_KEY set to key and, when fence is
// not 0, REDLOCK_FENCE and REDLOCK_FENCE_GRANT set to fence and grant; those
// two are removed otherwise. The variables of secretEnv are removed unless
// passSecrets is set.
func commandEnv(environ []string, key string, fence, grant uint64, passSecrets bool) []string {
	drop := []string{envKey, envFence, envGrant}
	if !passSecrets {
		drop = append(drop, secretEnv...)
	}
	env := make([]string, 0, len(environ)+3)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			env = append(env, kv)
		}
	}
	env = append(env, envKey+"="+key)
	if fence != 0 {
		env = append(env, envFence+"="+strconv.FormatUint(fence, 10), envGrant+"="+strconv.FormatUint(grant, 10))
	}
	return env
}
