package main

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
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

// child is the command running under the lock.
type child struct {
	cmd      *exec.Cmd
	ownGroup bool          // the command leads a process group of its own
	done     chan struct{} // closed once the command has exited and been waited for
}

// startChild starts cmd, in a process group of its own when ownGroup is
// set. The goroutine that starts the command waits for it, locked to its
// thread: on Linux the kernel signals the command when the thread that
// started it ends ([dieWithParent]), and Go may end a thread only when a
// goroutine locked to it returns.
func startChild(cmd *exec.Cmd, ownGroup bool) (*child, error) {
	configureCommand(cmd, ownGroup)
	c := &child{cmd: cmd, ownGroup: ownGroup, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		// The exit status is in cmd.ProcessState; with the standard
		// streams passed as files, Wait has no copying to fail.
		_ = cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
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
