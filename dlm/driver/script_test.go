package driver_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

func TestNewScript(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src, hash string // hash as `printf %s "$src" | sha1sum` prints it
	}{
		{"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{"return 1", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"},
	} {
		s := driver.NewScript(tc.src)
		if s.Source != tc.src || s.Hash != tc.hash {
			t.Errorf("NewScript(%q) = {%q, %q}; want {%q, %q}", tc.src, s.Source, s.Hash, tc.src, tc.hash)
		}
	}
}

// noScriptReply stands for a client library's error type for a Redis error
// reply.
type noScriptReply struct{}

func (noScriptReply) Error() string { return "NOSCRIPT No matching script. Please use EVAL." }

func TestIsNoScript(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"reply", errors.New("NOSCRIPT No matching script. Please use EVAL."), true},
		{"reply type", noScriptReply{}, true},
		{"wrapped reply", fmt.Errorf("adapter: node 127.0.0.1:6379: %w", noScriptReply{}), true},
		{"other error reply", errors.New("ERR unknown command"), false},
		{"NOSCRIPT in the middle", errors.New("ERR Error running script: NOSCRIPT"), false},
		{"lower case", errors.New("noscript"), false},
		{"wrapped other", fmt.Errorf("dial: %w", errors.New("connection refused")), false},
	} {
		if got := driver.IsNoScript(tc.err); got != tc.want {
			t.Errorf("IsNoScript(%s: %v) = %v; want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
