package main

import (
	"bytes"
	"errors"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
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

// TestURLErrorsShowNoParameterValue checks that run, elect and status,
// refusing a node URL, write no value of its parameters to stdout or stderr
// at any log level, only the parameter's name: neither a password given as
// a parameter, nor the password repeated in the database, a parameter or a
// file name, in any form, whatever characters it holds (a '"', a '\\', a
// tab, bytes of 0x80 and above).
func TestURLErrorsShowNoParameterValue(t *testing.T) {
	t.Parallel()
	const secret = "S3\"cr\\e\tt\u00f6\xffN0"
	e := url.QueryEscape(secret)
	user := url.UserPassword("u", secret).String()
	for _, tc := range []struct{ url, want string }{
		{"redis+goredis://127.0.0.1:1?password=" + e, `unknown parameter \"password\"`},
		{"redis+goredis://127.0.0.1:1?sentinel_master=m&sentinel_password=" + e, `unknown parameter \"sentinel_password\"`},
		{"redis+goredis://" + user + "@127.0.0.1:1/" + url.PathEscape(secret), "the database in the path"},
		{"redis+goredis://" + user + "@127.0.0.1:1?dial_timeout=" + e, "dial_timeout"},
		{"rediss+goredis://" + user + "@127.0.0.1:1?tls_ca_file=" + url.QueryEscape(filepath.Join(t.TempDir(), secret)), "tls_ca_file"},
	} {
		for _, cmd := range [][]string{{"run", "KEY", "--", "true"}, {"elect", "NAME", "VALUE", "--", "true"}, {"status", "KEY"}} {
			args := append([]string{cmd[0], "--nodes", tc.url, "--log-level", "debug"}, cmd[1:]...)
			var stdout, stderr bytes.Buffer
			code := redlock(args, env(), &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != exitConfig || !strings.Contains(out, tc.want) {
				t.Errorf("redlock %s --nodes %q = %d,\n%s\nwant %d and %q", cmd[0], tc.url, code, out, exitConfig, tc.want)
			}
			if form := dlmtest.ShownSecret(out, secret); form != "" {
				t.Errorf("redlock %s --nodes %q shows the secret as %q:\n%s", cmd[0], tc.url, form, out)
			}
		}
	}
}
