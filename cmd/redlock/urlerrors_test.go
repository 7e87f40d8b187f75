package main

import (
	"bytes"
	"errors"
	"regexp"
	"testing"

	"github.com/dlmgo/redlock/dlm/dlmtest"
)

// logTime matches the time of a text log record, which differs from run to
// run.
var logTime = regexp.MustCompile(`time=\S+ `)

// TestURLErrorsNeverQuotePassword checks that run, elect and status refuse
// node URLs whose password url.Parse would split elsewhere than at the user
// information, given by --nodes or REDLOCK_NODES, with exit code 78 and
// output that shows no part of the password.
func TestURLErrorsNeverQuotePassword(t *testing.T) {
	t.Parallel()
	// output runs redlock with the node URL rawURL and returns what it
	// wrote, as an error, or nil when it exited with 0.
	output := func(cmd []string, viaEnv bool, rawURL string) error {
		args, getenv := append([]string{cmd[0], "--nodes", rawURL}, cmd[1:]...), env()
		if viaEnv {
			args, getenv = cmd, env("REDLOCK_NODES="+rawURL)
		}
		var stdout, stderr bytes.Buffer
		code := redlock(args, getenv, &stdout, &stderr)
		if code != exitConfig {
			t.Errorf("redlock %q with a bad node URL = %d; want %d; stderr:\n%s", args, code, exitConfig, stderr.String())
		}
		if code == exitOK {
			return nil
		}
		return errors.New(logTime.ReplaceAllString(stdout.String()+stderr.String(), ""))
	}
	for _, cmd := range [][]string{{"run", "KEY", "--", "true"}, {"elect", "NAME", "VALUE", "--", "true"}, {"status", "KEY"}} {
		for _, viaEnv := range []bool{false, true} {
			for _, u := range dlmtest.BadURLs("") {
				if problem := dlmtest.CheckURLError(u, output(cmd, viaEnv, u.URL), output(cmd, viaEnv, u.Other)); problem != "" {
					t.Errorf("redlock %s with the node %q (from the environment: %v): %s", cmd[0], u.URL, viaEnv, problem)
				}
			}
		}
	}
}
