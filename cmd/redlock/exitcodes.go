package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"github.com/dlmgo/redlock/dlm"
)

// Exit codes of redlock itself, after sysexits(3) and the shells. When the
// command ran, redlock exits with the command's own code instead (128+N when
// signal N killed it).
const (
	// exitOK: the command exited 0, or status found every node answering.
	exitOK = 0
	// exitFailure: a failure of redlock that no other code describes.
	exitFailure = 1
	// exitUsage (EX_USAGE): a bad command line or environment variable.
	exitUsage = 64
	// exitUnavailable (EX_UNAVAILABLE): too many nodes failed for a
	// quorum, so the lock could not be taken; for status, a node did not
	// answer.
	exitUnavailable = 69
	// defaultLostCode (EX_SOFTWARE): the lock was lost while the command
	// ran, and the command was terminated. --lost-exit-code changes it.
	defaultLostCode = 70
	// defaultConflictCode (EX_TEMPFAIL): someone else holds the lock, and
	// --no-wait was given or --wait ran out. --conflict-exit-code
	// changes it.
	defaultConflictCode = 75
	// exitConfig (EX_CONFIG): no nodes configured, a bad node URL, an
	// unknown backend, a node refusing access (wrong password, ACL), or a
	// node that package dlm finds misconfigured (a Redis Cluster member
	// opened without ?cluster=true, two URLs of one server).
	exitConfig = 78
	// exitCannotExecute: the command was found but could not be run.
	exitCannotExecute = 126
	// exitNotFound: the command was not found.
	exitNotFound = 127
	// exitSignalBase is added to the number of the signal that killed the
	// command, or that made redlock stop waiting for the lock.
	exitSignalBase = 128
)

// errWaitExpired is the cause of a wait that --wait ended.
var errWaitExpired = errors.New("--wait expired")

// signalCause is the cause of a wait that a signal ended.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "stopped by " + signalName(c.sig) }

// failure is why the lock was not obtained.
type failure int

const (
	failOther         failure = iota
	failConflict              // someone else holds the lock
	failUnavailable           // too many nodes failed for a quorum
	failConfig                // a node refused access
	failMisconfigured         // a node is misconfigured (ErrInvalid from a node)
	failInvalid               // package dlm rejected the request
	failSignal                // a signal stopped the wait
)

// classifyAcquire says why an attempt to take the lock failed with err.
// cause is why the wait was stopped (a [signalCause] or [errWaitExpired]),
// or nil when it was not; last is the failure of the last attempt that ran
// to its end, which tells a wait that ran out behind a holder from one that
// ran out with the nodes down.
func classifyAcquire(err, cause, last error) failure {
	switch {
	case errors.As(cause, new(signalCause)):
		return failSignal
	case errors.Is(err, dlm.ErrPermission), errors.Is(last, dlm.ErrPermission):
		return failConfig
	case errors.Is(err, dlm.ErrInvalid) && errors.As(err, new(*dlm.NodeError)):
		// A request package dlm refuses is refused before any node is
		// asked: ErrInvalid with a node's failure is the node's
		// configuration, as a Redis Cluster member opened as a single
		// server, which retrying cannot fix.
		return failMisconfigured
	case errors.Is(err, dlm.ErrInvalid):
		return failInvalid
	case errors.Is(err, dlm.ErrNotObtained):
		return failConflict
	case errors.Is(err, dlm.ErrUnavailable):
		return failUnavailable
	case errors.Is(cause, errWaitExpired):
		if errors.Is(last, dlm.ErrUnavailable) {
			return failUnavailable
		}
		// Held elsewhere, or no attempt ran to its end before the wait
		// ran out: either way, the thing to do is to try again later.
		return failConflict
	}
	return failOther
}

// acquireExitCode is the exit code for a lock not obtained, as
// [classifyAcquire] reads the failure.
func acquireExitCode(err, cause, last error, conflictCode int) int {
	switch classifyAcquire(err, cause, last) {
	case failSignal:
		var sc signalCause
		errors.As(cause, &sc)
		return signalExitCode(sc.sig)
	case failConfig, failMisconfigured:
		return exitConfig
	case failInvalid:
		return exitUsage
	case failConflict:
		return conflictCode
	case failUnavailable:
		return exitUnavailable
	}
	return exitFailure
}

// startExitCode maps a failure to find or start the command to the code a
// shell would give: 127 when it does not exist, 126 when it cannot be run.
func startExitCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT) {
		return exitNotFound
	}
	return exitCannotExecute
}

// commandExitCode is the exit code redlock passes on for a command that
// ended: its own, or 128+N when signal N killed it.
func commandExitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalExitCode is 128 plus the signal's number, as shells report a death
// by signal.
func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return exitSignalBase + int(s)
	}
	return exitFailure
}

// statusExitCode is the exit code of status given each node's failure:
// exitConfig if a node refused access or is misconfigured (ErrInvalid: a
// Redis Cluster member opened as a single server), as run exits for
// them; exitUnavailable if another did not answer; exitOK when all
// answered.
func statusExitCode(errs []error) int {
	code := exitOK
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, dlm.ErrPermission), errors.Is(err, dlm.ErrInvalid):
			return exitConfig
		default:
			code = exitUnavailable
		}
	}
	return code
}
