package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// runStep runs a step of make test (argv, with the standard streams
// passed through), appends "NAME WALL EXIT CPU" to dir's steps file, and
// returns the step's exit status. CPU is the step's and its children's.
func runStep(name, dir string, argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "testreport -step: no command")
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = withoutJobserver(os.Environ())
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	rc := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		rc = max(exit.ExitCode(), 1)
	case err != nil:
		fmt.Fprintln(os.Stderr, "testreport -step:", err)
		rc = 1
	}
	var cpu time.Duration
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	f, err := os.OpenFile(filepath.Join(dir, "steps"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport -step:", err)
		return max(rc, 1)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %.1f %d %.1f\n", name, wall.Seconds(), rc, cpu.Seconds())
	return rc
}

// jobserverFlag matches the words of MAKEFLAGS that hand a make's job slots
// to its children: -jN and the jobserver's file descriptors.
var jobserverFlag = regexp.MustCompile(`^(-j[0-9]*|--jobserver-(auth|fds)=.*)$`)

// withoutJobserver returns env with the job-slot words taken out of
// MAKEFLAGS: a make run by a step (whose descriptors do not pass through
// this process) runs its recipe one job at a time, as it would anyway,
// without warning that the jobserver is unavailable. The variables given on
// make's command line stay.
func withoutJobserver(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "MAKEFLAGS="); ok {
			var keep []string
			for _, w := range strings.Fields(v) {
				if !jobserverFlag.MatchString(w) {
					keep = append(keep, w)
				}
			}
			kv = "MAKEFLAGS=" + strings.Join(keep, " ")
		}
		out = append(out, kv)
	}
	return out
}
