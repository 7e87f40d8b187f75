package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestPlainURLDefaultBackend checks the CLI's rule for a URL that names no
// backend (redis://, rediss://, or a bare HOST:PORT): it gets --backend
// (REDLOCK_BACKEND), goredis by default, as every Redis tool connects to a
// plain redis:// URL, while the library keeps refusing such a URL where
// several backends are registered; a URL that names its backend keeps it;
// and a URL without a host is a bad URL (78, "no host"), not localhost,
// whatever the backend.
func TestPlainURLDefaultBackend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend string
		entries []string
		want    []string
	}{
		{"", []string{"redis://h:1", "rediss://h:2", "h:3", "REDIS://h:5", "redis+redigo://h:4"},
			[]string{"redis+goredis://h:1", "rediss+goredis://h:2", "redis+goredis://h:3", "redis+goredis://h:5", "redis+redigo://h:4"}},
	} {
		urls, _, err := nodeURLs(tc.entries, tc.backend)
		if err != nil || strings.Join(urls, " ") != strings.Join(tc.want, " ") {
			t.Errorf("nodeURLs(%q, %q) = %q, %v; want %q", tc.entries, tc.backend, urls, err, tc.want)
		}
	}
	for _, backend := range []string{"goredis", "redigo", "rueidis", "valkey"} {
		urls, _, err := nodeURLs([]string{"redis://h:1", "rediss://h:2", "h:3", "redis+redigo://h:4"}, backend)
		want := []string{"redis+" + backend + "://h:1", "rediss+" + backend + "://h:2", "redis+" + backend + "://h:3", "redis+redigo://h:4"}
		if err != nil || strings.Join(urls, " ") != strings.Join(want, " ") {
			t.Errorf("nodeURLs with --backend %s = %q, %v; want %q", backend, urls, err, want)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no host", []string{"status", "--nodes", "redis://", "--backend", "goredis", "k"}},
		{"no host, backend named", []string{"status", "--nodes", "redis+goredis://:6379", "k"}},
		{"no host, no backend", []string{"status", "--nodes", "redis://", "k"}},
	} {
		var stdout, stderr bytes.Buffer
		code := redlock(tc.args, env(), &stdout, &stderr)
		if code != exitConfig || !strings.Contains(stderr.String(), "no host") {
			t.Errorf("%s: redlock %q = %d, stderr:\n%s\nwant %d and %q", tc.name, tc.args, code, stderr.String(), exitConfig, "no host")
		}
	}
}

// TestPlainURLConnects checks on real servers that a plain redis:// URL, a
// bare address and REDLOCK_NODES of plain URLs work without --backend:
// status answers for every node (exit 0), and run runs its command.
func TestPlainURLConnects(t *testing.T) {
	t.Parallel()
	servers := redistest.StartServers(t, 3)
	measurePaceThrough(t, servers[0])
	plain := "redis://" + servers[0].Addr() + "," + servers[1].Addr() + ",redis://" + servers[2].Addr()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"status, --nodes", nil, []string{"status", "--nodes", plain, "k"}},
		{"status, REDLOCK_NODES", []string{"REDLOCK_NODES=" + plain}, []string{"status", "k"}},
		{"run", []string{"REDLOCK_NODES=" + plain}, runArgs("k", sh("exit 0"), "--no-wait")},
	} {
		code, stdout, stderr := redlockRun(t, tc.env, tc.args...)
		if code != exitOK {
			t.Errorf("%s: redlock %q = %d, stdout:\n%s\nstderr:\n%s\nwant 0", tc.name, tc.args, code, stdout, stderr)
		}
	}
	// A database the server lacks is a bad URL: exit 78, with the
	// server's reply.
	args := []string{"status", "--nodes", "redis://" + servers[0].Addr() + "/99", "k"}
	if code, _, stderr := redlockRun(t, nil, args...); code != exitConfig || !strings.Contains(stderr, "DB index is out of range") {
		t.Errorf("redlock %q = %d, stderr:\n%s\nwant %d and ERR DB index is out of range", args, code, stderr, exitConfig)
	}
}
