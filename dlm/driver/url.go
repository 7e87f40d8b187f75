package driver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlmgo/redlock/dlm/internal/invalid"
)

// Default values that [ParseURL] fills in when a URL leaves them out.
const (
	DefaultPort         = "6379"
	DefaultDialTimeout  = 2 * time.Second
	DefaultReadTimeout  = 3 * time.Second
	DefaultWriteTimeout = 3 * time.Second
	// DefaultReplyLimit is the reply limit of a URL without reply_limit:
	// see [Config.ReplyLimit].
	DefaultReplyLimit = 16 << 20
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
	// Addr is host:port; the port defaults to 6379. A URL without a host
	// is refused: it is not localhost by default.
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
	// ReplyLimit bounds what one reply of the server may announce, in
	// bytes, on the connections a backend dials for a node it opens from
	// a URL (reply_limit; default [DefaultReplyLimit], 16 MiB): the bytes
	// of its strings and lines, plus 64 per element of its arrays, maps,
	// sets and pushes. The client libraries allocate what a reply's
	// header announces before its payload arrives; a reply that would
	// pass the limit fails its connection instead. reply_limit=none
	// lifts it (ReplyLimit -1); 0 means the default. It is given in bytes
	// or with a KiB, MiB or GiB suffix ("64MiB").
	ReplyLimit int64

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
	"cluster": true, "addr": true, "sentinel_master": true, "reply_limit": true,
}

// ParseURL reads a node URL of the form
//
//	redis[s][+DRIVER]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?PARAM=VALUE&...]
//
// "rediss" turns TLS on. Parameters: db, dial_timeout, read_timeout,
// write_timeout (Go durations such as 50ms), pool_size, reply_limit, and for TLS
// tls_ca_file, tls_cert_file, tls_key_file (PEM files), tls_server_name and
// tls_insecure_skip_verify; for a node that is a Redis Cluster or a master
// found through Sentinel, cluster, sentinel_master and addr (see
// [Config.Name]). Errors wrap [ErrBadURL] and never contain the password:
// they show the URL as [RedactOrigin] does, without its path, query and
// fragment, and name what is wrong (a parameter, the database, the port),
// never the value given, which may repeat the password, or be one
// (password=, sentinel_password=, which no node URL has).
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
		return nil, badURL(rawURL, nil, "", "%s", parseFailure(rawURL, err))
	}
	// From here on every message is also scrubbed of the password, which a
	// careless URL may repeat elsewhere (in the path, in a parameter).
	var password string
	if u.User != nil {
		password, _ = u.User.Password()
	}
	bad := func(format string, args ...any) error { return badURL(rawURL, u, password, format, args...) }
	scheme, drv, _ := strings.Cut(u.Scheme, "+")
	if scheme != "redis" && scheme != "rediss" {
		return nil, bad("scheme %q: want redis://, rediss://, redis+DRIVER:// or rediss+DRIVER://", u.Scheme)
	}
	if strings.Contains(u.Scheme, "+") && drv == "" {
		return nil, bad("scheme %q names no driver after '+'", u.Scheme)
	}
	if u.Host == "" && u.User == nil && strings.Contains(u.Opaque+u.Path, "@") {
		// "redis:user:pass@host" or "redis:/user:pass@host": user
		// information outside an authority, which the path error below
		// would quote.
		return nil, bad("user information needs %s://USER:PASSWORD@HOST", u.Scheme)
	}
	if u.Opaque != "" {
		return nil, bad("want %s://HOST:PORT", u.Scheme)
	}
	if start, end, ok := userinfoSpan(rawURL); ok && !clearUserinfo(rawURL, start, end) {
		// An '@' after a '/', '?' or '#': the parser took what may be
		// a password for the host, path or query, which the errors
		// below would quote. Such a URL is refused whole, so that what
		// ParseURL accepts and what Redact hides agree.
		return nil, badURL(rawURL, nil, "", "%s", unclearUserinfo)
	}
	cfg := &Config{
		Driver:       drv,
		Password:     password,
		DialTimeout:  DefaultDialTimeout,
		ReadTimeout:  DefaultReadTimeout,
		WriteTimeout: DefaultWriteTimeout,
		ReplyLimit:   DefaultReplyLimit,
	}
	if cfg.Addr, err = hostPort(u.Host); err != nil {
		return nil, bad("%v", err)
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if cfg.DB, err = parseDB(p); err != nil {
			return nil, bad("the database in the path: %v", err)
		}
	}
	if u.Fragment != "" {
		return nil, bad("unexpected fragment")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, bad("%s", queryFailure(err))
	}
	if err := cfg.applyParams(q, scheme == "rediss"); err != nil {
		return nil, bad("%v", err)
	}
	return cfg, nil
}

// queryFailure says why url.ParseQuery refused a query with err, without
// the piece of the query its message quotes.
func queryFailure(err error) string {
	var esc url.EscapeError
	if errors.As(err, &esc) {
		return "query: a '%' that starts no escape (write a '%' as %25)"
	}
	return "query: " + unquoted(err.Error())
}

// hostPort returns host, a URL's host or an addr parameter, as HOST:PORT,
// the port 6379 when it has none. Its errors name the part that is wrong,
// not what it holds: the host, as a parameter, may repeat a password.
func hostPort(host string) (string, error) {
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		// No port: the whole thing is the host. An IPv6 literal needs its
		// brackets, or "fe80::1:6380" would silently mean port 6379.
		h, p = host, DefaultPort
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			h = h[1 : len(h)-1]
		} else if strings.Contains(h, ":") {
			return "", errors.New("host: put an IPv6 address in brackets, as in [::1]:6379")
		}
	}
	switch {
	case strings.ContainsAny(h, "[]") || h == "" && strings.HasPrefix(host, "["):
		return "", errors.New("host: want a host name or an IPv6 address in brackets")
	case h == "":
		// Not localhost by default: a host left out by mistake, as an
		// unset variable in redis://${HOST}:6379, must not make a lock
		// node of whatever listens on this machine.
		return "", errors.New("no host: write redis://HOST:PORT (redis://localhost:6379 for this machine)")
	case !validHost(h):
		return "", errors.New("host: want a host name (letters, digits, '.', '-', '_') or an IP address")
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", errors.New("port: want a number from 1 to 65535")
	}
	// The port in canonical form, so that "h:06379" and "h:6379" are the
	// same address to the manager's duplicate check.
	return net.JoinHostPort(h, strconv.Itoa(n)), nil
}

// validHost reports whether h, without brackets, is a host name, an IPv4
// address, or an IPv6 address with an optional zone: letters (non-ASCII
// ones too, for internationalized names), digits and ".-_:%".
func validHost(h string) bool {
	if !utf8.ValidString(h) {
		return false
	}
	for _, r := range h {
		switch {
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(".-_:%", r)):
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)):
		default:
			return false
		}
	}
	return true
}

// parseDB reads a database number; its error says what is wanted, and the
// caller where the number was.
func parseDB(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errors.New("want a non-negative number")
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
			if !paramName(k) {
				return errors.New("unknown parameter, whose name holds characters no parameter has")
			}
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
			return fmt.Errorf("db: %v", err)
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Duration
	}{{"dial_timeout", &c.DialTimeout}, {"read_timeout", &c.ReadTimeout}, {"write_timeout", &c.WriteTimeout}} {
		if v := q.Get(p.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%s: want a positive duration such as 50ms", p.name)
			}
			*p.dst = d
		}
	}
	if v := q.Get("pool_size"); v != "" {
		if c.PoolSize, err = strconv.Atoi(v); err != nil || c.PoolSize < 1 {
			return errors.New("pool_size: want a positive number")
		}
	}
	if v := q.Get("reply_limit"); v != "" {
		if c.ReplyLimit, err = parseReplyLimit(v); err != nil {
			return err
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

// maxReplyLimit is the largest reply_limit: 1 TiB, far beyond any
// reply, and small enough that no sum of announced lengths overflows.
const maxReplyLimit = 1 << 40

// parseReplyLimit reads reply_limit: "none", or a positive number of
// bytes, with an optional KiB, MiB or GiB suffix.
func parseReplyLimit(v string) (int64, error) {
	if v == "none" {
		return -1, nil
	}
	unit := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if s, ok := strings.CutSuffix(v, u.suffix); ok {
			v, unit = s, u.n
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > maxReplyLimit/unit {
		return 0, errors.New("reply_limit: want none, or a positive number of bytes up to 1 TiB, such as 16777216 or 16MiB")
	}
	return n * unit, nil
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
			return errors.New("tls_insecure_skip_verify: want true or false")
		}
		c.TLS.InsecureSkipVerify = skip
	}
	if f := q.Get("tls_ca_file"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("tls_ca_file: %w", withoutPath(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return errors.New("tls_ca_file holds no PEM certificate")
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
			return fmt.Errorf("client certificate (tls_cert_file, tls_key_file): %w", withoutPath(err))
		}
		c.TLS.Certificates = []tls.Certificate{cert}
	}
	return nil
}

// badURL returns an error wrapping [ErrBadURL] that shows rawURL as
// [shownURL] does, followed by the reason format and args give, and scrubs
// every form of the password from the whole message. u is rawURL parsed,
// or nil when it does not parse; when it does not, or its user information
// is unclear, rawURL is shown from its raw text, and what may be its
// password is scrubbed too (see [maybePasswords]).
func badURL(rawURL string, u *url.URL, password, format string, args ...any) error {
	if start, end, ok := userinfoSpan(rawURL); ok && !clearUserinfo(rawURL, start, end) {
		u = nil // what the parser took for the host may be a password
	}
	secrets := []string{password}
	if u == nil {
		secrets = append(secrets, maybePasswords(rawURL)...)
	}
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = redactStrings(s, secrets)
		}
	}
	msg := shownURL(rawURL, u, password) + ": " + fmt.Sprintf(format, args...)
	return fmt.Errorf("%w %s", ErrBadURL, redactStrings(msg, secrets))
}

// withoutPath returns err without the file name an *fs.PathError carries:
// a file name given in a URL may repeat its password, in forms no
// redaction knows. The operation and the cause remain, and errors.Is still
// sees the cause (fs.ErrNotExist).
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s the file: %w", pe.Op, pe.Err)
	}
	return err
}

// paramName reports whether k may be named in an error: letters, digits
// and "_.-", as every parameter's name. Any other name is not quoted, since
// it may hold a password written in any mixture of escapes.
func paramName(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return k != ""
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

// describeURLError says what url.Parse found wrong, without the piece of
// the URL its message quotes ("invalid port \":x\" after host").
func describeURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return unquoted(err.Error())
}

// quotedPiece matches a string quoted by %q in a message, and the space
// before it.
var quotedPiece = regexp.MustCompile(` ?"(?:[^"\\]|\\.)*"`)

// unquoted returns msg without what it quotes.
func unquoted(msg string) string {
	return quotedPiece.ReplaceAllString(msg, "")
}
