//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestRunSharedAndLimit checks that --shared runs hold a key together and
// keep the writer out, that --limit N lets N runs in and turns the next one
// away, and that the modes refuse to be combined.
func TestRunSharedAndLimit(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	for _, tc := range []struct {
		name     string
		opts     []string // of the holders
		intruder []string
	}{
		{"readers keep the writer out", []string{"--shared"}, nil},
		{"two of two permits", []string{"--limit", "2"}, []string{"--limit", "2"}},
	} {
		dir := t.TempDir()
		release := filepath.Join(dir, "release")
		var holders []*proc
		for i := range 2 {
			ready := filepath.Join(dir, "ready"+strconv.Itoa(i))
			args := runArgs("key-"+strconv.Itoa(len(tc.opts)), sh(`touch "$2"; `+boundedWait, release, ready), append([]string{"--nodes", nodes}, tc.opts...)...)
			holders = append(holders, startRedlock(t, nil, args...))
			waitFor(t, tc.name+": holder "+strconv.Itoa(i)+" running (both at once)", func() bool { return fileHas(ready, "") })
		}
		opts := append([]string{"--nodes", nodes, "--no-wait"}, tc.intruder...)
		code, _, stderr := redlockRun(t, nil, runArgs("key-"+strconv.Itoa(len(tc.opts)), []string{"true"}, opts...)...)
		if code != defaultConflictCode {
			t.Errorf("%s: the third run exited with %d; want %d (held elsewhere)\n%s", tc.name, code, defaultConflictCode, stderr)
		}
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range holders {
			p.expectExit(0)
		}
		if code, _, stderr := redlockRun(t, nil, runArgs("key-"+strconv.Itoa(len(tc.opts)), []string{"true"}, opts...)...); code != 0 {
			t.Errorf("%s: a run after the holders left exited with %d; want 0\n%s", tc.name, code, stderr)
		}
	}
	for _, bad := range [][]string{{"--shared", "--limit", "2"}, {"--shared", "--fencing"}, {"--limit", "2", "--fencing"}, {"--limit", "0"}, {"--limit", "x"}} {
		code, _, stderr := redlockRun(t, nil, runArgs("k", []string{"true"}, append([]string{"--nodes", nodes}, bad...)...)...)
		if code != exitUsage {
			t.Errorf("redlock run %q exited with %d; want %d\n%s", bad, code, exitUsage, stderr)
		}
	}
}
