package driver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Default values that [ParseURL] fills in when a URL leaves them out.
const (
	DefaultPort         = "6379"
	DefaultDialTimeout  = 2 * time.Second
	DefaultReadTimeout  = 3 * time.Second
	DefaultWriteTimeout = 3 * time.Second
)

// ErrBadURL is wrapped by every error [ParseURL] returns; check it with
// errors.Is.
var ErrBadURL = errors.New("driver: bad node URL")

// Config is what a node URL says, in the terms every client library shares.
// Adapters translate it into their own client options.
type Config struct {
	// Driver is the name after "+" in the scheme ("goredis" in
	// "redis+goredis://"), or "" for a plain "redis://" URL.
	Driver string
	// Addr is host:port; the port defaults to 6379 and the host to localhost.
	Addr string
	// Username and Password come from the URL's user information. An empty
	// Username with a Password means the default user (AUTH password).
	Username string
	Password string
	// DB is the database number from the path ("/3") or the db parameter.
	DB int
	// TLS is non-nil for rediss:// URLs.
	TLS *tls.Config
	// DialTimeout bounds connecting (parameter dial_timeout; default 2s).
	DialTimeout time.Duration
	// ReadTimeout and WriteTimeout bound one socket read or write
	// (read_timeout, write_timeout; default 3s). Per-request deadlines come
	// from the context and are usually much shorter.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// PoolSize is the connection pool size (pool_size; 0 means the client
	// library's default).
	PoolSize int
}

// URL parameters [ParseURL] understands. Any other parameter is an error, so a
// misspelt option is not silently ignored.
var knownParams = map[string]bool{
	"db": true, "dial_timeout": true, "read_timeout": true, "write_timeout": true,
	"pool_size": true, "tls_ca_file": true, "tls_cert_file": true, "tls_key_file": true,
	"tls_server_name": true, "tls_insecure_skip_verify": true,
}

// ParseURL reads a node URL of the form
//
//	redis[s][+DRIVER]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?PARAM=VALUE&...]
//
// "rediss" turns TLS on. Parameters: db, dial_timeout, read_timeout,
// write_timeout (Go durations such as 50ms), pool_size, and for TLS
// tls_ca_file, tls_cert_file, tls_key_file (PEM files), tls_server_name and
// tls_insecure_skip_verify. Errors wrap [ErrBadURL] and never contain the
// password.
func ParseURL(rawURL string) (*Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the raw URL, password included: say what failed
		// without it.
		return nil, badURL(rawURL, "%s", describeURLError(err))
	}
	scheme, drv, _ := strings.Cut(u.Scheme, "+")
	if scheme != "redis" && scheme != "rediss" {
		return nil, badURL(rawURL, "scheme %q: want redis://, rediss://, redis+DRIVER:// or rediss+DRIVER://", u.Scheme)
	}
	if strings.Contains(u.Scheme, "+") && drv == "" {
		return nil, badURL(rawURL, "scheme %q names no driver after '+'", u.Scheme)
	}
	if u.Opaque != "" {
		return nil, badURL(rawURL, "want %s://HOST:PORT", u.Scheme)
	}
	cfg := &Config{
		Driver:       drv,
		DialTimeout:  DefaultDialTimeout,
		ReadTimeout:  DefaultReadTimeout,
		WriteTimeout: DefaultWriteTimeout,
	}
	if cfg.Addr, err = hostPort(u.Host); err != nil {
		return nil, badURL(rawURL, "%v", err)
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if cfg.DB, err = parseDB(p); err != nil {
			return nil, badURL(rawURL, "path: %v", err)
		}
	}
	if u.Fragment != "" {
		return nil, badURL(rawURL, "unexpected fragment")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, badURL(rawURL, "query: %v", err)
	}
	if err := cfg.applyParams(q, scheme == "rediss"); err != nil {
		return nil, badURL(rawURL, "%v", err)
	}
	return cfg, nil
}

func hostPort(host string) (string, error) {
	if host == "" {
		return net.JoinHostPort("localhost", DefaultPort), nil
	}
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		// No port: the whole thing is the host (IPv6 literals keep brackets).
		h, p = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), DefaultPort
	}
	if h == "" {
		h = "localhost"
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want a number from 1 to 65535", p)
	}
	return net.JoinHostPort(h, p), nil
}

func parseDB(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("database %q: want a non-negative number", s)
	}
	return n, nil
}

func (c *Config) applyParams(q url.Values, useTLS bool) error {
	for k, vs := range q {
		if !knownParams[k] {
			return fmt.Errorf("unknown parameter %q", k)
		}
		if len(vs) != 1 {
			return fmt.Errorf("parameter %q given %d times", k, len(vs))
		}
		if strings.HasPrefix(k, "tls_") && !useTLS {
			return fmt.Errorf("parameter %q needs a rediss:// URL", k)
		}
	}
	var err error
	if v := q.Get("db"); v != "" {
		if c.DB, err = parseDB(v); err != nil {
			return err
		}
	}
	for name, dst := range map[string]*time.Duration{
		"dial_timeout": &c.DialTimeout, "read_timeout": &c.ReadTimeout, "write_timeout": &c.WriteTimeout,
	} {
		if v := q.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%s %q: want a positive duration such as 50ms", name, v)
			}
			*dst = d
		}
	}
	if v := q.Get("pool_size"); v != "" {
		if c.PoolSize, err = strconv.Atoi(v); err != nil || c.PoolSize < 1 {
			return fmt.Errorf("pool_size %q: want a positive number", v)
		}
	}
	if useTLS {
		return c.buildTLS(q)
	}
	return nil
}

func (c *Config) buildTLS(q url.Values) error {
	host, _, _ := net.SplitHostPort(c.Addr)
	c.TLS = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if v := q.Get("tls_server_name"); v != "" {
		c.TLS.ServerName = v
	}
	if v := q.Get("tls_insecure_skip_verify"); v != "" {
		skip, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("tls_insecure_skip_verify %q: want true or false", v)
		}
		c.TLS.InsecureSkipVerify = skip
	}
	if f := q.Get("tls_ca_file"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("tls_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls_ca_file %q holds no PEM certificate", f)
		}
		c.TLS.RootCAs = pool
	}
	certFile, keyFile := q.Get("tls_cert_file"), q.Get("tls_key_file")
	if (certFile == "") != (keyFile == "") {
		return errors.New("tls_cert_file and tls_key_file go together")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("client certificate: %w", err)
		}
		c.TLS.Certificates = []tls.Certificate{cert}
	}
	return nil
}

func badURL(rawURL, format string, args ...any) error {
	return fmt.Errorf("%w %s: %s", ErrBadURL, Redact(rawURL), fmt.Sprintf(format, args...))
}

func describeURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
