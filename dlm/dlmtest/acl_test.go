package dlmtest_test

import (
	"context"
	"github.com/dlmgo/redlock/dlm/redistest"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/resp"
)

// doAs sends one command to s as user (the default user when "").
func doAs(t *testing.T, s *redistest.Server, user, password string, args ...string) (any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := resp.Dial(ctx, &driver.Config{Addr: s.Addr(), Username: user, Password: password, TLS: s.TLSConfig()})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(ctx, args...)
}

// TestACLFile checks that the servers load the users of WithACLFile, that
// the harness still authenticates while anyone else must, and that Restart
// loads the file again, over TLS as in the clear.
func TestACLFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []redistest.ServerOption
	}{
		{"Plain", nil},
		{"TLS", []redistest.ServerOption{redistest.WithTLS()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.StartServer(t, append(tc.opts, redistest.WithACLFile(t, "user alice on >pw-alice resetkeys ~a:* -@all +set +ping"))...)
			check := func(when string) {
				t.Helper()
				if v, err := s.Do("ACL", "WHOAMI"); v != "default" || err != nil {
					t.Errorf("%s: redistest.Server.Do(ACL WHOAMI) = %v, %v; want default, nil", when, v, err)
				}
				if v, err := doAs(t, s, "alice", "pw-alice", "SET", "a:1", "x"); v != "OK" || err != nil {
					t.Errorf("%s: SET a:1 as alice = %v, %v; want OK, nil", when, v, err)
				}
				if _, err := doAs(t, s, "alice", "pw-alice", "SET", "b:1", "x"); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
					t.Errorf("%s: SET b:1 as alice = %v; want NOPERM", when, err)
				}
				if _, err := doAs(t, s, "", "", "PING"); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
					t.Errorf("%s: PING without a password = %v; want NOAUTH", when, err)
				}
			}
			check("after the start")
			if _, err := s.Do("ACL", "SETUSER", "bob", "on", ">pw-bob", "+ping"); err != nil {
				t.Fatal(err)
			}
			s.Restart()
			check("after Restart")
			if _, err := doAs(t, s, "bob", "pw-bob", "PING"); err == nil || !strings.HasPrefix(err.Error(), "resp: AUTH") {
				t.Errorf("PING as bob, made by ACL SETUSER before Restart = %v; want AUTH refused: the file has no bob", err)
			}
		})
	}
}

// TestLeastPrivilegeRulesEscape checks on a server that the key pattern of
// a prefix with glob characters matches that prefix alone.
func TestLeastPrivilegeRulesEscape(t *testing.T) {
	t.Parallel()
	const prefix = "a*b?[c]:"
	s := redistest.StartServer(t, redistest.WithACLFile(t, "user u on >pw "+strings.Join(dlmtest.LeastPrivilegeRules(prefix), " ")))
	get := "return redis.call('GET', KEYS[1])"
	if _, err := doAs(t, s, "u", "pw", "EVAL", get, "1", prefix+"{k}"); err != nil {
		t.Errorf("GET %s{k} = %v; want nil", prefix, err)
	}
	for _, key := range []string{"aXbYc:{k}", "a*b?c:{k}", "redlock:{k}"} {
		if _, err := doAs(t, s, "u", "pw", "EVAL", get, "1", key); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("GET %s under prefix %q = %v; want NOPERM", key, prefix, err)
		}
	}
}
