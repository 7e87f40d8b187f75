package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRootBuildBinaryIgnored checks that the binary "go build ./cmd/redlock"
// leaves at the repository's root (redlock, or redlock.exe on Windows), and
// the one "go build" leaves in cmd/redlock, are ignored by git, and that the
// rules do not hide the command's directory, cmd/redlock, whose name is the
// binary's too. It asks git itself, so that what is checked is what
// "git status" shows.
func TestRootBuildBinaryIgnored(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".gitignore")); err != nil {
		t.Skipf("no .gitignore at %s (not a checkout of the repository): %v", root, err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skipf("git is not installed: %v", err)
	}
	for _, tc := range []struct {
		path    string
		ignored bool
	}{
		{"redlock", true},
		{"redlock.exe", true},
		{"cmd/redlock/redlock", true},
		{"cmd/redlock/redlock.exe", true},
		{"cmd/redlock", false},
		{"cmd/redlock/main.go", false},
		{"cmd/redlock/go.mod", false},
	} {
		// --no-index: a path is checked against the rules whether or not
		// it is tracked. Exit status 0: ignored; 1: not ignored.
		cmd := exec.Command(git, "-C", root, "check-ignore", "--no-index", "-q", tc.path)
		err := cmd.Run()
		var exit *exec.ExitError
		ignored := err == nil
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
			t.Fatalf("git check-ignore %s: %v", tc.path, err)
		}
		if ignored != tc.ignored {
			t.Errorf("git check-ignore %s: ignored %v; want %v", tc.path, ignored, tc.ignored)
		}
	}
}
