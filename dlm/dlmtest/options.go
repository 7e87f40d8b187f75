package dlmtest

// ServerOption configures the servers [StartServer] and [StartServers]
// start.
type ServerOption func(*serverConfig)

// serverConfig is what the options say.
type serverConfig struct {
	args []string
	tls  bool
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

// WithTLS makes the servers accept TLS only. The harness creates a test
// certificate authority and a certificate for 127.0.0.1 and localhost; a
// client trusts them through [Server.TLSConfig] or, in a rediss:// URL,
// through tls_ca_file=[Server.CAFile]. Client certificates are not required.
func WithTLS() ServerOption {
	return func(c *serverConfig) { c.tls = true }
}

// password returns the value of the last --requirepass in args, or "".
func (c *serverConfig) password() string {
	pw := ""
	for i := 0; i+1 < len(c.args); i++ {
		if c.args[i] == "--requirepass" {
			pw = c.args[i+1]
		}
	}
	return pw
}
