package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ServerOption configures the servers [StartServer] and [StartServers]
// start.
type ServerOption func(*serverConfig)

// serverConfig is what the options say.
type serverConfig struct {
	args []string
	tls  bool
	// cluster enables cluster mode (StartRedisCluster).
	cluster bool
	// sentinelConf runs a Sentinel with this configuration file
	// (StartSentinel).
	sentinelConf string
	// aclPassword is the default user's password in the ACL file of
	// WithACLFile, or "" without one.
	aclPassword string
}

// WithArgs appends args to the redis-server command line, after the
// harness's own (port, bind address, no persistence), so they can override
// them: WithArgs("--requirepass", "pw"), WithArgs("--appendonly", "yes",
// "--appendfsync", "always"). A server started with --requirepass
// authenticates its own connections ([Server.Do], the readiness check) with
// that password.
func WithArgs(args ...string) ServerOption {
	return func(c *serverConfig) { c.args = append(c.args, args...) }
}

// WithoutScripting renames EVALSHA and EVAL away on the servers
// (rename-command EVALSHA "" and EVAL ""), a common hardening step. Such a
// server answers every script with "ERR unknown command 'evalsha', with
// args beginning with: ...", quoting the first arguments of the request.
func WithoutScripting() ServerOption {
	return WithArgs("--rename-command", "EVALSHA", "", "--rename-command", "EVAL", "")
}

// WithTLS makes the servers accept TLS only. The harness creates a test
// certificate authority and a certificate for 127.0.0.1 and localhost; a
// client trusts them through [Server.TLSConfig] or, in a rediss:// URL,
// through tls_ca_file=[Server.CAFile]. Client certificates are not required.
func WithTLS() ServerOption {
	return func(c *serverConfig) { c.tls = true }
}

// WithACLFile makes the servers load their users from an ACL file (redis-server
// --aclfile) that holds lines, each in the file's format, "user NAME
// RULE...":
//
//	redistest.WithACLFile(t, "user locker on >pw "+strings.Join(dlmtest.LeastPrivilegeRules(dlm.DefaultKeyPrefix), " "))
//
// The file is written at once, into t.TempDir() under an absolute path, so
// every server given the option, and [Server.Restart], loads the same file:
// users changed at run time by ACL SETUSER are back as the file says after a
// restart.
//
// The harness owns the default user: the file starts with a line that gives
// it every right and a random password, with which [Server.Do] and the
// readiness check authenticate. A client that names no user is the default
// user and, without that password, is refused (NOAUTH). lines must not name
// the default user (Redis refuses a user defined twice), and --requirepass
// has no effect: the file sets the default user's password.
func WithACLFile(t testing.TB, lines ...string) ServerOption {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("redistest: ACL file: %v", err)
	}
	password := hex.EncodeToString(b[:])
	path := filepath.Join(t.TempDir(), "users.acl")
	content := "user default on >" + password + " ~* &* +@all\n"
	for _, l := range lines {
		if strings.ContainsAny(l, "\r\n") {
			t.Fatalf("redistest: WithACLFile: line %q holds a line break", l)
		}
		content += l + "\n"
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("redistest: ACL file: %v", err)
	}
	return func(c *serverConfig) {
		c.args = append(c.args, "--aclfile", path)
		c.aclPassword = password
	}
}

// password returns the password the harness authenticates with: the default
// user's in the ACL file of WithACLFile, or else the value of the last
// --requirepass in args, or "".
func (c *serverConfig) password() string {
	if c.aclPassword != "" {
		return c.aclPassword
	}
	pw := ""
	for i := 0; i+1 < len(c.args); i++ {
		if c.args[i] == "--requirepass" {
			pw = c.args[i+1]
		}
	}
	return pw
}
