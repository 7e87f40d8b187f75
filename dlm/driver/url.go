package driver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/invalid"
)

// Default values that [ParseURL] fills in when a URL leaves them out.
const (
	DefaultPort         = "6379"
	DefaultDialTimeout  = 2 * time.Second
	DefaultReadTimeout  = 3 * time.Second
	DefaultWriteTimeout = 3 * time.Second
)

// ErrBadURL is wrapped by every error [ParseURL] returns; check it with
// errors.Is. A bad URL is bad input: every error that wraps ErrBadURL also
// matches [github.com/dlmgo/redlock/dlm.ErrInvalid], whichever function
// returned it — ParseURL, a driver's Open, [github.com/dlmgo/redlock/dlm.Open]
// or [github.com/dlmgo/redlock/dlm.OpenNode].
var ErrBadURL error = &badURLError{"driver: bad node URL"}

// badURLError is the type of [ErrBadURL], whose Is makes it match
// dlm.ErrInvalid.
type badURLError struct{ msg string }

func (e *badURLError) Error() string { return e.msg }

// Is reports whether target is dlm.ErrInvalid.
func (e *badURLError) Is(target error) bool { return target == invalid.Err }

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

	// Cluster is set by cluster=true: the node is a whole Redis Cluster,
	// reached through the seed addresses Addrs (see [Config.Name]).
	Cluster bool
	// SentinelMaster is the sentinel_master parameter: the node is the
	// master of this set, found through the Sentinels at Addrs.
	SentinelMaster string
	// Addrs are, for Cluster and SentinelMaster, the URL's host and its addr
	// parameters, sorted; nil otherwise.
	Addrs []string
}

// URL parameters [ParseURL] understands. Any other parameter is an error, so a
// misspelt option is not silently ignored.
var knownParams = map[string]bool{
	"db": true, "dial_timeout": true, "read_timeout": true, "write_timeout": true,
	"pool_size": true, "tls_ca_file": true, "tls_cert_file": true, "tls_key_file": true,
	"tls_server_name": true, "tls_insecure_skip_verify": true,
	"cluster": true, "addr": true, "sentinel_master": true,
}

// ParseURL reads a node URL of the form
//
//	redis[s][+DRIVER]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?PARAM=VALUE&...]
//
// "rediss" turns TLS on. Parameters: db, dial_timeout, read_timeout,
// write_timeout (Go durations such as 50ms), pool_size, and for TLS
// tls_ca_file, tls_cert_file, tls_key_file (PEM files), tls_server_name and
// tls_insecure_skip_verify; for a node that is a Redis Cluster or a master
// found through Sentinel, cluster, sentinel_master and addr (see
// [Config.Name]). Errors wrap [ErrBadURL] and never contain the password.
//
// The user information ends at the last '@'. A password must have its '/',
// '?' and '#' percent-encoded (%2F, %3F, %23), or the parser would take the
// rest of it for the port, path or query: a URL with an '@' after a '/', '?'
// or '#' is refused, and its errors, as those of a URL url.Parse refuses,
// quote nothing between the scheme and the last '@'.
func ParseURL(rawURL string) (*Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the raw URL, password included, and its reason
		// may quote a piece of the password: say what failed without
		// either.
		return nil, badURL(rawURL, "", "%s", parseFailure(rawURL, err))
	}
	// From here on every message is also scrubbed of the password, which a
	// careless URL may repeat elsewhere (in the path, in a parameter).
	var password string
	if u.User != nil {
		password, _ = u.User.Password()
	}
	scheme, drv, _ := strings.Cut(u.Scheme, "+")
	if scheme != "redis" && scheme != "rediss" {
		return nil, badURL(rawURL, password, "scheme %q: want redis://, rediss://, redis+DRIVER:// or rediss+DRIVER://", u.Scheme)
	}
	if strings.Contains(u.Scheme, "+") && drv == "" {
		return nil, badURL(rawURL, password, "scheme %q names no driver after '+'", u.Scheme)
	}
	if u.Host == "" && u.User == nil && strings.Contains(u.Opaque+u.Path, "@") {
		// "redis:user:pass@host" or "redis:/user:pass@host": user
		// information outside an authority, which the path error below
		// would quote.
		return nil, badURL(rawURL, password, "user information needs %s://USER:PASSWORD@HOST", u.Scheme)
	}
	if u.Opaque != "" {
		return nil, badURL(rawURL, password, "want %s://HOST:PORT", u.Scheme)
	}
	if start, end, ok := userinfoSpan(rawURL); ok && !clearUserinfo(rawURL, start, end) {
		// An '@' after a '/', '?' or '#': the parser took what may be
		// a password for the host, path or query, which the errors
		// below would quote. Such a URL is refused whole, so that what
		// ParseURL accepts and what Redact hides agree.
		return nil, badURL(rawURL, "", "%s", unclearUserinfo)
	}
	cfg := &Config{
		Driver:       drv,
		Password:     password,
		DialTimeout:  DefaultDialTimeout,
		ReadTimeout:  DefaultReadTimeout,
		WriteTimeout: DefaultWriteTimeout,
	}
	if cfg.Addr, err = hostPort(u.Host); err != nil {
		return nil, badURL(rawURL, password, "%v", err)
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if cfg.DB, err = parseDB(p); err != nil {
			return nil, badURL(rawURL, password, "path: %v", err)
		}
	}
	if u.Fragment != "" {
		return nil, badURL(rawURL, password, "unexpected fragment")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, badURL(rawURL, password, "query: %v", err)
	}
	if err := cfg.applyParams(q, scheme == "rediss"); err != nil {
		return nil, badURL(rawURL, password, "%v", err)
	}
	return cfg, nil
}

func hostPort(host string) (string, error) {
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		// No port: the whole thing is the host. An IPv6 literal needs its
		// brackets, or "fe80::1:6380" would silently mean port 6379.
		h, p = host, DefaultPort
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			h = h[1 : len(h)-1]
		} else if strings.Contains(h, ":") {
			return "", fmt.Errorf("host %q: put an IPv6 address in brackets, as in [::1]:6379", host)
		}
	}
	if strings.ContainsAny(h, "[]") || h == "" && strings.HasPrefix(host, "[") {
		return "", fmt.Errorf("host %q: want a host name or an IPv6 address in brackets", host)
	}
	if h == "" {
		h = "localhost"
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want a number from 1 to 65535", p)
	}
	// The port in canonical form, so that "h:06379" and "h:6379" are the
	// same address to the manager's duplicate check.
	return net.JoinHostPort(h, strconv.Itoa(n)), nil
}

func parseDB(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("database %q: want a non-negative number", s)
	}
	return n, nil
}

func (c *Config) applyParams(q url.Values, useTLS bool) error {
	// In a fixed order, so that a URL with several faults always gets the
	// same error.
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !knownParams[k] {
			return fmt.Errorf("unknown parameter %q", k)
		}
		if len(q[k]) != 1 && k != "addr" {
			return fmt.Errorf("parameter %q given %d times", k, len(q[k]))
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
	for _, p := range []struct {
		name string
		dst  *time.Duration
	}{{"dial_timeout", &c.DialTimeout}, {"read_timeout", &c.ReadTimeout}, {"write_timeout", &c.WriteTimeout}} {
		if v := q.Get(p.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%s %q: want a positive duration such as 50ms", p.name, v)
			}
			*p.dst = d
		}
	}
	if v := q.Get("pool_size"); v != "" {
		if c.PoolSize, err = strconv.Atoi(v); err != nil || c.PoolSize < 1 {
			return fmt.Errorf("pool_size %q: want a positive number", v)
		}
	}
	if err := c.applyTopology(q); err != nil {
		return err
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

// badURL returns an error wrapping [ErrBadURL] that names rawURL without its
// password, and scrubs password, when known, from the whole message.
func badURL(rawURL, password, format string, args ...any) error {
	msg := Redact(rawURL) + ": " + fmt.Sprintf(format, args...)
	return fmt.Errorf("%w %s", ErrBadURL, redactString(msg, password))
}

// Reasons for URLs whose user information cannot be told apart from the
// rest, or does not parse; they quote nothing of the URL.
const (
	unclearUserinfo = "an '@' follows a '/', '?' or '#', so where the user information ends is unclear: " +
		"percent-encode '/', '?' and '#' in a password (%2F, %3F, %23), and '@' after the host (%40)"
	badUserinfo = "user information does not parse: percent-encode '%', spaces and control characters " +
		"in a user name or password (%25, %20)"
	badScheme = "want a scheme such as redis:// before \"://\""
)

// parseFailure says why url.Parse refused rawURL with err, without quoting
// anything that may be user information (see [Redact]): the parser's reason
// when the URL has no '@' or still fails with its user information
// replaced, and one of a few fixed reasons otherwise.
func parseFailure(rawURL string, err error) string {
	start, end, ok := userinfoSpan(rawURL)
	switch {
	case !ok:
		return describeURLError(err)
	case strings.Contains(rawURL[:end], "://") && !strings.HasSuffix(rawURL[:start], "://"):
		return badScheme
	case strings.ContainsAny(rawURL[start:end], "/?#"):
		return unclearUserinfo
	}
	if _, err := url.Parse(rawURL[:start] + "user" + rawURL[end:]); err != nil {
		// The fault lies outside the user information, and so does
		// what the message quotes.
		return describeURLError(err)
	}
	return badUserinfo
}

func describeURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
