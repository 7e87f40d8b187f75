package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"testing"

	"github.com/dlmgo/redlock/dlm"
)

// Failures as package dlm reports them.
var (
	errTaken       = &dlm.QuorumError{Op: "lock", Key: "job", Nodes: 3, Quorum: 2, Against: 2}
	errNodesDown   = &dlm.QuorumError{Op: "lock", Key: "job", Nodes: 3, Quorum: 2, Failed: 2}
	errRefused     = fmt.Errorf("dlm: lock: %w", &dlm.NodeError{Node: "h:1", Err: errors.New("WRONGPASS invalid username-password pair")})
	errInterrupted = fmt.Errorf("dlm: lock %q: stopped waiting after 3 attempts: %w", "job", context.Canceled)
)

func TestAcquireExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		err, cause, last error
		want             int
	}{
		{"held elsewhere", errTaken, nil, errTaken, 75},
		{"nodes down", errNodesDown, nil, errNodesDown, 69},
		{"access refused", errRefused, nil, nil, 78},
		{"access refused in the last attempt", errInterrupted, errWaitExpired, errRefused, 78},
		{"invalid request", fmt.Errorf("%w: empty key", dlm.ErrInvalid), nil, nil, 64},
		{"wait ran out behind a holder", errInterrupted, errWaitExpired, errTaken, 75},
		{"wait ran out with the nodes down", errInterrupted, errWaitExpired, errNodesDown, 69},
		{"wait ran out before any attempt ended", errInterrupted, errWaitExpired, nil, 75},
		{"SIGINT while waiting", errInterrupted, signalCause{syscall.SIGINT}, errTaken, 130},
		{"SIGTERM while waiting", errInterrupted, signalCause{syscall.SIGTERM}, nil, 143},
		{"anything else", errors.New("dlm: random source failed"), nil, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := acquireExitCode(tt.err, tt.cause, tt.last, 75); got != tt.want {
				t.Errorf("acquireExitCode(%v, %v, %v) = %d; want %d", tt.err, tt.cause, tt.last, got, tt.want)
			}
		})
	}
	if got := acquireExitCode(errTaken, nil, nil, 3); got != 3 {
		t.Errorf("acquireExitCode(taken) with --conflict-exit-code 3 = %d; want 3", got)
	}
}

func TestStartExitCode(t *testing.T) {
	t.Parallel()
	_, notFound := exec.LookPath("redlock-test-no-such-command")
	_, noFile := exec.LookPath("/no/such/file")
	_, notExec := exec.LookPath("/etc/hostname")
	tests := []struct {
		err  error
		want int
	}{
		{notFound, 127},
		{noFile, 127},
		{&exec.Error{Name: "x", Err: syscall.ENOENT}, 127},
		{notExec, 126},
		{&exec.Error{Name: "x", Err: syscall.ENOEXEC}, 126},
	}
	for _, tt := range tests {
		if got := startExitCode(tt.err); got != tt.want {
			t.Errorf("startExitCode(%v) = %d; want %d", tt.err, got, tt.want)
		}
	}
}

func TestCommandExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 255", 255},
		{"kill -TERM $$", 128 + 15},
		{"kill -KILL $$", 128 + 9},
	}
	for _, tt := range tests {
		cmd := exec.Command("sh", "-c", tt.script)
		_ = cmd.Run() // the exit status is in ProcessState
		if cmd.ProcessState == nil {
			t.Fatalf("sh -c %q did not run", tt.script)
		}
		if got := commandExitCode(cmd.ProcessState); got != tt.want {
			t.Errorf("commandExitCode(sh -c %q) = %d; want %d", tt.script, got, tt.want)
		}
	}
}

func TestStatusExitCode(t *testing.T) {
	t.Parallel()
	down := &dlm.NodeError{Node: "h:2", Err: errors.New("connection refused")}
	refused := &dlm.NodeError{Node: "h:3", Err: errors.New("NOPERM this user has no permissions to run the 'evalsha' command")}
	tests := []struct {
		errs []error
		want int
	}{
		{[]error{nil, nil, nil}, 0},
		{[]error{nil, down, nil}, 69},
		{[]error{down, nil, refused}, 78},
	}
	for _, tt := range tests {
		if got := statusExitCode(tt.errs); got != tt.want {
			t.Errorf("statusExitCode(%v) = %d; want %d", tt.errs, got, tt.want)
		}
	}
}

// TestClusterMemberExitCode checks the exit codes of a node that package dlm
// reports as misconfigured (a NodeError matching ErrInvalid: a member of a
// Redis Cluster opened as a single server, keys of several slots, two URLs
// of one server): 78, the configuration, for run and status alike; and that
// an invalid request, refused before any node was asked, stays 64.
func TestClusterMemberExitCode(t *testing.T) {
	t.Parallel()
	misconfigured := &dlm.NodeError{Node: "h:1", Err: errors.New("CROSSSLOT Keys in request don't hash to the same slot")}
	if !errors.Is(misconfigured, dlm.ErrInvalid) {
		t.Fatalf("%v does not match ErrInvalid", misconfigured)
	}
	quorum := &dlm.QuorumError{Op: "lock", Key: "job", Nodes: 3, Quorum: 2, Failed: 2, Err: misconfigured}
	for _, err := range []error{quorum, fmt.Errorf("dlm: lock: %w", misconfigured)} {
		if got := acquireExitCode(err, nil, err, 75); got != exitConfig {
			t.Errorf("acquireExitCode(%v) = %d; want %d", err, got, exitConfig)
		}
	}
	if got := acquireExitCode(fmt.Errorf("%w: empty key", dlm.ErrInvalid), nil, nil, 75); got != exitUsage {
		t.Errorf("acquireExitCode(invalid request) = %d; want %d", got, exitUsage)
	}
	if got := statusExitCode([]error{nil, misconfigured, nil}); got != exitConfig {
		t.Errorf("statusExitCode(a misconfigured node) = %d; want %d", got, exitConfig)
	}
	if got := statusExitCode([]error{&dlm.NodeError{Node: "h:2", Err: errors.New("dial tcp: connection refused")}, misconfigured}); got != exitConfig {
		t.Errorf("statusExitCode(a node down, another misconfigured) = %d; want %d", got, exitConfig)
	}
}
