package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

func TestNodeURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entry, backend, want string
	}{
		{"redis://10.0.0.1:6379", "goredis", "redis+goredis://10.0.0.1:6379"},
		{"rediss://:pw@r1:6380/2?tls_server_name=r", "goredis", "rediss+goredis://:pw@r1:6380/2?tls_server_name=r"},
		{"REDIS://h:1", "goredis", "redis+goredis://h:1"},
		{"redis://h:1", "rueidis", "redis+rueidis://h:1"},
		{"rediss://h:1", "valkey", "rediss+valkey://h:1"},
		{"10.0.0.1:6379", "goredis", "redis+goredis://10.0.0.1:6379"},
		{"localhost", "redigo", "redis+redigo://localhost"},
		{"user:pw@h:1", "goredis", "redis+goredis://user:pw@h:1"},
		{"[::1]:6379", "goredis", "redis+goredis://[::1]:6379"},
		{"redis+rueidis://h:1", "goredis", "redis+rueidis://h:1"},
		{"rediss+redigo://h:1", "goredis", "rediss+redigo://h:1"},
		{"redis+valkey://h:1", "goredis", "redis+valkey://h:1"},
		{"http://h:1", "goredis", "http://h:1"},
		// Without --backend, plain URLs go through the default backend.
		{"redis://h:1", "", "redis+goredis://h:1"},
		{"REDISS://h:1", "", "rediss+goredis://h:1"},
		{"h:1", "", "redis+goredis://h:1"},
		{"redis+redigo://h:1", "", "redis+redigo://h:1"},
	}
	for _, tt := range tests {
		if got := nodeURL(tt.entry, tt.backend); got != tt.want {
			t.Errorf("nodeURL(%q, %q) = %q; want %q", tt.entry, tt.backend, got, tt.want)
		}
	}
}

func TestNodeURLs(t *testing.T) {
	t.Parallel()
	urls, pw, err := nodeURLs([]string{"redis://:first@h1:1", "h2:2", "redis+redigo://u:second@h3:3"}, "goredis")
	if err != nil {
		t.Fatalf("nodeURLs = %v; want no error", err)
	}
	want := []string{"redis+goredis://:first@h1:1", "redis+goredis://h2:2", "redis+redigo://u:second@h3:3"}
	if !slices.Equal(urls, want) {
		t.Errorf("nodeURLs = %q; want %q", urls, want)
	}
	if !slices.Equal(pw, secrets{"first", "second"}) {
		t.Errorf("nodeURLs passwords = %q; want first, second", pw)
	}
	err = pw.scrub(errors.New("dial redis://:first@h1 failed; AUTH second refused"))
	if msg := err.Error(); strings.Contains(msg, "first") || strings.Contains(msg, "second") {
		t.Errorf("scrub left a password: %q", msg)
	}
}

func TestNodeURLsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entries []string
		want    string
	}{
		{nil, "no nodes"},
		{[]string{"h1:1", "http://h2:2"}, "node 1:"},
		{[]string{"redis://:s3cret@h1:1?bogus=1"}, "unknown parameter"},
		{[]string{"redis://:s3cret@h1:notaport"}, "node 0:"},
	}
	for _, tt := range tests {
		_, _, err := nodeURLs(tt.entries, "goredis")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("nodeURLs(%q) = %v; want an error containing %q", tt.entries, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("nodeURLs(%q) = %v: the password shows", tt.entries, err)
		}
		if len(tt.entries) > 0 && !errors.Is(err, driver.ErrBadURL) {
			t.Errorf("nodeURLs(%q) = %v; want an error wrapping driver.ErrBadURL", tt.entries, err)
		}
	}
}

// TestNodeNumbersOneConvention checks that the command's own errors and
// package dlm's number a node alike, from 0: the third entry of --nodes is
// "node 2" in both.
func TestNodeNumbersOneConvention(t *testing.T) {
	t.Parallel()
	entries := []string{"h1:1", "h2:2", "http://h3:3"}
	_, _, cliErr := nodeURLs(entries, "goredis")
	urls := []string{"redis+goredis://h1:1", "redis+goredis://h2:2", "http://h3:3"}
	_, libErr := dlm.Open(urls)
	for name, err := range map[string]error{"nodeURLs": cliErr, "dlm.Open": libErr} {
		if err == nil || !strings.Contains(err.Error(), "node 2:") {
			t.Errorf("%s of a bad third URL = %v; want an error naming node 2", name, err)
		}
	}
}

func TestRedactAll(t *testing.T) {
	t.Parallel()
	got := redactAll([]string{"redis+goredis://:pw@h:1", "redis://h:2", "rediss+rueidis://u:pw@h:3/2?tls_server_name=pw"})
	want := []string{"redis+goredis://:" + driver.Redacted + "@h:1", "redis://h:2", "rediss+rueidis://u:" + driver.Redacted + "@h:3/..."}
	if !slices.Equal(got, want) {
		t.Errorf("redactAll = %q; want %q", got, want)
	}
}

// TestNodesFlagPasswordWithComma checks that --nodes and REDLOCK_NODES
// split the list only between entries: a comma in a password, as written or
// as %2C, stays in it, a comma followed by a scheme always separates two
// URLs, and the commas after an entry's last '@' separate bare addresses.
func TestNodesFlagPasswordWithComma(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value     string
		entries   []string
		passwords secrets
	}{
		{"redis://:pa,ss@h1:1", []string{"redis://:pa,ss@h1:1"}, secrets{"pa,ss"}},
		{"redis://:pa,ss@h1:1,redis://:,x,@h2:2", []string{"redis://:pa,ss@h1:1", "redis://:,x,@h2:2"}, secrets{"pa,ss", ",x,"}},
		{"rediss://u:a,b,c@h1:1, REDIS+redigo://h2:2", []string{"rediss://u:a,b,c@h1:1", "REDIS+redigo://h2:2"}, secrets{"a,b,c"}},
		{"redis://:pa%2Css@h1:1,redis://h2:2", []string{"redis://:pa%2Css@h1:1", "redis://h2:2"}, secrets{"pa,ss"}},
		{"u:pa,ss@h1:1,h2:2,h3:3", []string{"u:pa,ss@h1:1", "h2:2", "h3:3"}, secrets{"pa,ss"}},
		{"h1:1,h2:2, h3:3,", []string{"h1:1", "h2:2", "h3:3"}, nil},
		{"redis://h1:1,h2:2,redis://:p,w@h3:3,h4:4", []string{"redis://h1:1", "h2:2", "redis://:p,w@h3:3", "h4:4"}, secrets{"p,w"}},
		{",redis://h1:1,,", []string{"redis://h1:1"}, nil},
	} {
		for _, from := range []string{"--nodes", "REDLOCK_NODES"} {
			c := defaultConfig()
			args, getenv := []string{"--nodes", tc.value, "KEY"}, env()
			if from == "REDLOCK_NODES" {
				args, getenv = []string{"KEY"}, env("REDLOCK_NODES="+tc.value)
			}
			if _, _, err := parse("status", statusOptions(c), args, 1, getenv); err != nil {
				t.Errorf("%s %q: %v", from, tc.value, err)
				continue
			}
			if !slices.Equal(c.nodes, tc.entries) {
				t.Errorf("%s %q: nodes %q; want %q", from, tc.value, c.nodes, tc.entries)
				continue
			}
			if _, pw, err := nodeURLs(c.nodes, "goredis"); err != nil || !slices.Equal(pw, tc.passwords) {
				t.Errorf("%s %q: passwords %q, %v; want %q", from, tc.value, pw, err, tc.passwords)
			}
		}
	}
}
