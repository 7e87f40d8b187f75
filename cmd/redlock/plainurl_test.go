package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlainURLOneRule checks that the CLI follows the library's rule for a
// URL that names no backend (redis://, rediss://, or a bare HOST:PORT): it
// names one only when --backend (or REDLOCK_BACKEND) says which, since the
// binary includes several, and is refused with exit 78 otherwise, as
// dlm.Open refuses it where several backends are registered, rather than
// given one quietly; and that a URL without a host is a bad URL (78,
// "no host"), not localhost, whatever the backend.
func TestPlainURLOneRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string // in stderr
	}{
		{"plain URL", []string{"status", "--nodes", "redis://127.0.0.1:1", "k"}, nil, "names no backend"},
		{"plain TLS URL", []string{"status", "--nodes", "rediss://127.0.0.1:1", "k"}, nil, "names no backend"},
		{"bare address", []string{"status", "--nodes", "127.0.0.1:1", "k"}, nil, "names no backend"},
		{"plain URL, from the environment", []string{"status", "k"}, []string{"REDLOCK_NODES=redis://127.0.0.1:1"}, "names no backend"},
		{"no host", []string{"status", "--nodes", "redis://", "--backend", "goredis", "k"}, nil, "no host"},
		{"no host, backend named", []string{"status", "--nodes", "redis+goredis://:6379", "k"}, nil, "no host"},
		{"no host, no backend", []string{"status", "--nodes", "redis://", "k"}, nil, "no host"},
	} {
		var stdout, stderr bytes.Buffer
		code := redlock(tc.args, env(tc.env...), &stdout, &stderr)
		if code != exitConfig || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: redlock %q = %d, stderr:\n%s\nwant %d and %q", tc.name, tc.args, code, stderr.String(), exitConfig, tc.want)
		}
	}
	// With --backend, the same URLs name it: nodeURL gives them the
	// scheme redis+NAME://, which dlm.Open would take from the URL.
	for _, backend := range []string{"goredis", "redigo", "rueidis"} {
		urls, _, err := nodeURLs([]string{"redis://h:1", "rediss://h:2", "h:3", "redis+redigo://h:4"}, backend)
		want := []string{"redis+" + backend + "://h:1", "rediss+" + backend + "://h:2", "redis+" + backend + "://h:3", "redis+redigo://h:4"}
		if err != nil || strings.Join(urls, " ") != strings.Join(want, " ") {
			t.Errorf("nodeURLs with --backend %s = %q, %v; want %q", backend, urls, err, want)
		}
	}
}
