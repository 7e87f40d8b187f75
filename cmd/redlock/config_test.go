package main

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// env returns a getenv over vars, given as "NAME=value".
func env(vars ...string) func(string) string {
	m := make(map[string]string)
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func TestParseRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     []string
		key     string
		command []string
		check   func(c *config) string // returns what is wrong, or ""
	}{
		{
			name: "defaults", args: []string{"job", "--", "true"}, key: "job", command: []string{"true"},
			check: func(c *config) string {
				if c.ttl != 10*time.Second || c.wait != waitForever || c.grace != defaultGrace || c.conflictCode != 75 ||
					c.lostCode != 70 || c.fencing || c.quiet || c.logLevel != slog.LevelWarn || c.logFormat != "text" ||
					c.backend != "" || c.keyPrefix != "redlock:" || c.nodes != nil || c.nodeTimeout != 0 {
					return "not the defaults"
				}
				return ""
			},
		},
		{
			name: "flags before KEY", args: []string{"--ttl", "30s", "--wait=2m", "--fencing", "--fair", "--nodes", "a:1,b:2", "job", "--", "make", "-j4"},
			key: "job", command: []string{"make", "-j4"},
			check: func(c *config) string {
				if c.ttl != 30*time.Second || c.wait != 2*time.Minute || !c.fencing || !c.fair || !slices.Equal(c.nodes, []string{"a:1", "b:2"}) {
					return "flags not applied"
				}
				return ""
			},
		},
		{
			name: "flags after KEY", args: []string{"job", "--no-wait", "-grace", "1.5", "--", "sh", "-c", "x"},
			key: "job", command: []string{"sh", "-c", "x"},
			check: func(c *config) string {
				if c.wait != 0 || c.grace != 1500*time.Millisecond {
					return "flags after KEY not applied"
				}
				return ""
			},
		},
		{
			name: "no -- before COMMAND", args: []string{"job", "ls", "-l", "--ttl"}, key: "job", command: []string{"ls", "-l", "--ttl"},
		},
		{
			name: "-- before KEY", args: []string{"--quiet", "--", "job", "--ttl", "5"}, key: "job", command: []string{"--ttl", "5"},
			check: func(c *config) string {
				if !c.quiet || c.ttl != dlmDefaultTTL {
					return "everything after -- must be arguments"
				}
				return ""
			},
		},
		{
			name: "COMMAND starting with a dash after --", args: []string{"job", "--", "-weird"}, key: "job", command: []string{"-weird"},
		},
		{
			name: "environment", args: []string{"job", "--", "true"}, key: "job", command: []string{"true"},
			env: []string{"REDLOCK_NODES=a:1, b:2 ,c:3", "REDLOCK_TTL=20s", "REDLOCK_WAIT=forever", "REDLOCK_GRACE=0",
				"REDLOCK_FENCING=yes", "REDLOCK_CONFLICT_EXIT_CODE=0", "REDLOCK_LOST_EXIT_CODE=99", "REDLOCK_KEY_PREFIX=x:",
				"REDLOCK_NODE_TIMEOUT=75ms", "REDLOCK_LOG_FORMAT=json", "REDLOCK_LOG_LEVEL=DEBUG", "REDLOCK_QUIET=1", "REDLOCK_BACKEND=rueidis"},
			check: func(c *config) string {
				if !slices.Equal(c.nodes, []string{"a:1", "b:2", "c:3"}) || c.ttl != 20*time.Second || c.wait != waitForever ||
					c.grace != 0 || !c.fencing || c.conflictCode != 0 || c.lostCode != 99 || c.keyPrefix != "x:" ||
					c.nodeTimeout != 75*time.Millisecond || c.logFormat != "json" || c.logLevel != slog.LevelDebug || !c.quiet ||
					c.backend != "rueidis" {
					return "environment not applied"
				}
				return ""
			},
		},
		{
			name: "flags override the environment", args: []string{"--ttl", "3s", "--nodes", "x:1", "--nodes", "y:2", "--wait", "1m", "--quiet=false", "job", "true"},
			key: "job", command: []string{"true"},
			env: []string{"REDLOCK_NODES=a:1,b:2", "REDLOCK_TTL=20s", "REDLOCK_NO_WAIT=true", "REDLOCK_QUIET=true"},
			check: func(c *config) string {
				if !slices.Equal(c.nodes, []string{"x:1", "y:2"}) || c.ttl != 3*time.Second || c.wait != time.Minute || c.quiet {
					return "flags did not win"
				}
				return ""
			},
		},
		{
			name: "empty variables are unset", args: []string{"job", "true"}, key: "job", command: []string{"true"},
			env: []string{"REDLOCK_TTL=", "REDLOCK_NODES="},
			check: func(c *config) string {
				if c.ttl != dlmDefaultTTL || c.nodes != nil {
					return "empty variables applied"
				}
				return ""
			},
		},
		{
			name: "--wait 0 is --no-wait", args: []string{"--wait", "0", "job", "true"}, key: "job", command: []string{"true"},
			check: func(c *config) string {
				if c.wait != 0 {
					return "wait not 0"
				}
				return ""
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig()
			pos, rest, err := parse("run", runOptions(c), tt.args, 1, env(tt.env...))
			if err != nil {
				t.Fatalf("parse(%q) = %v; want no error", tt.args, err)
			}
			if len(pos) != 1 || pos[0] != tt.key || !slices.Equal(rest, tt.command) {
				t.Fatalf("parse(%q) = KEY %q, COMMAND %q; want %q, %q", tt.args, pos, rest, tt.key, tt.command)
			}
			if tt.check != nil {
				if msg := tt.check(c); msg != "" {
					t.Errorf("parse(%q) with env %q: %s: %+v", tt.args, tt.env, msg, *c)
				}
			}
		})
	}
}

// dlmDefaultTTL is the default --ttl.
const dlmDefaultTTL = 10 * time.Second

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  string
		args []string
		env  []string
		want string // in the error
	}{
		{"unknown flag", "run", []string{"--wat", "1", "job", "true"}, nil, "not defined: --wat"},
		{"bad duration", "run", []string{"--ttl", "soon", "job", "true"}, nil, `invalid value "soon" for flag --ttl`},
		{"TTL too short", "run", []string{"--ttl", "5ms", "job", "true"}, nil, "too short"},
		{"negative grace", "run", []string{"--grace", "-1s", "job", "true"}, nil, "negative"},
		{"bad wait", "run", []string{"--wait", "later", "job", "true"}, nil, "or forever"},
		{"exit code out of range", "run", []string{"--conflict-exit-code", "256", "job", "true"}, nil, "0 to 255"},
		{"bad log format", "run", []string{"--log-format", "xml", "job", "true"}, nil, "want one of text, json"},
		{"bad log level", "status", []string{"--log-level", "loud", "job"}, nil, "want debug, info, warn or error"},
		{"bad backend", "status", []string{"--backend", "jedis", "job"}, nil, "want one of goredis, redigo, rueidis, valkey"},
		{"bad boolean", "run", []string{"--fencing=maybe", "job", "true"}, nil, "not a boolean"},
		{"flag without value", "run", []string{"job", "--ttl"}, nil, "needs an argument: --ttl"},
		{"empty --nodes", "run", []string{"--nodes", ",", "job", "true"}, nil, "no node URL"},
		{"--wait and --no-wait", "run", []string{"--wait", "1s", "--no-wait", "job", "true"}, nil, "--no-wait and --wait: give only one"},
		{"--fair and --shared", "run", []string{"--fair", "--shared", "job", "true"}, nil, "give only one"},
		{"--fair and --limit", "run", []string{"--fair", "--limit", "2", "job", "true"}, nil, "give only one"},
		{"bad environment variable", "run", []string{"job", "true"}, []string{"REDLOCK_TTL=abc"}, `REDLOCK_TTL="abc"`},
		{"bad switch variable", "status", []string{"job"}, []string{"REDLOCK_JSON=2"}, `REDLOCK_JSON="2"`},
		{"REDLOCK_WAIT and REDLOCK_NO_WAIT", "run", []string{"job", "true"}, []string{"REDLOCK_WAIT=1s", "REDLOCK_NO_WAIT=1"}, "both set"},
		{"run flag on status", "status", []string{"--ttl", "1s", "job"}, nil, "not defined: --ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig()
			opts := runOptions(c)
			if tt.cmd == "status" {
				opts = statusOptions(c)
			}
			_, _, err := parse(tt.cmd, opts, tt.args, 1, env(tt.env...))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse(%q) with env %q = %v; want an error containing %q", tt.args, tt.env, err, tt.want)
			}
		})
	}
}

func TestParseHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"--help"}, {"job", "--help"}} {
		_, _, err := parse("run", runOptions(defaultConfig()), args, 1, env())
		if !errors.Is(err, errHelp) {
			t.Errorf("parse(%q) = %v; want errHelp", args, err)
		}
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		env      []string
		pos      []string
		rest     []string
		wantJSON bool
	}{
		{[]string{"job"}, nil, []string{"job"}, nil, false},
		{[]string{"job", "--json"}, nil, []string{"job"}, []string{}, true},
		{[]string{"--json=false", "job"}, []string{"REDLOCK_JSON=true"}, []string{"job"}, []string{}, false},
		{[]string{"job"}, []string{"REDLOCK_JSON=true"}, []string{"job"}, nil, true},
		{[]string{"job", "extra"}, nil, []string{"job"}, []string{"extra"}, false},
		{[]string{}, nil, nil, []string{}, false},
	}
	for _, tt := range tests {
		c := defaultConfig()
		pos, rest, err := parse("status", statusOptions(c), tt.args, 1, env(tt.env...))
		if err != nil || !slices.Equal(pos, tt.pos) || !slices.Equal(rest, tt.rest) || c.json != tt.wantJSON {
			t.Errorf("parse(%q) with env %q = %q, %q, %v, json %v; want %q, %q, no error, json %v",
				tt.args, tt.env, pos, rest, err, c.json, tt.pos, tt.rest, tt.wantJSON)
		}
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10", 10 * time.Second, true},
		{"2.5", 2500 * time.Millisecond, true},
		{"500ms", 500 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"0", 0, true},
		{"NaN", 0, false},
		{"1e300", 0, false},
		{"10 s", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestCheckKey(t *testing.T) {
	t.Parallel()
	if err := checkKey("job"); err != nil {
		t.Errorf("checkKey(%q) = %v; want nil", "job", err)
	}
	if err := checkKey(""); err == nil {
		t.Errorf("checkKey(%q) = nil; want an error", "")
	}
	if err := checkKey(strings.Repeat("k", 1025)); err == nil {
		t.Errorf("checkKey(1025 bytes) = nil; want an error")
	}
}
