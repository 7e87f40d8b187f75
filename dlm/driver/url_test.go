package driver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
)

// defaults returns the Config of "redis://localhost" with edit applied.
func defaults(edit func(*driver.Config)) *driver.Config {
	c := &driver.Config{
		Addr:         "localhost:6379",
		DialTimeout:  driver.DefaultDialTimeout,
		ReadTimeout:  driver.DefaultReadTimeout,
		WriteTimeout: driver.DefaultWriteTimeout,
		ReplyLimit:   driver.DefaultReplyLimit,
	}
	if edit != nil {
		edit(c)
	}
	return c
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url        string
		want       *driver.Config // TLS aside
		serverName string         // want TLS with this server name; "" for none
	}{
		// Schemes.
		{"redis://h:6380", defaults(func(c *driver.Config) { c.Addr = "h:6380" }), ""},
		{"rediss://h:6380", defaults(func(c *driver.Config) { c.Addr = "h:6380" }), "h"},
		{"redis+goredis://h", defaults(func(c *driver.Config) { c.Driver, c.Addr = "goredis", "h:6379" }), ""},
		{"rediss+rueidis://h", defaults(func(c *driver.Config) { c.Driver, c.Addr = "rueidis", "h:6379" }), "h"},
		{"redis+my-driver.v2://h", defaults(func(c *driver.Config) { c.Driver, c.Addr = "my-driver.v2", "h:6379" }), ""},
		// Schemes are case-insensitive (RFC 3986); url.Parse lowers them,
		// driver name included.
		{"REDIS+GoRedis://h", defaults(func(c *driver.Config) { c.Driver, c.Addr = "goredis", "h:6379" }), ""},

		// User information.
		{"redis://u:pw@h", defaults(func(c *driver.Config) { c.Addr, c.Username, c.Password = "h:6379", "u", "pw" }), ""},
		{"redis://:pw@h", defaults(func(c *driver.Config) { c.Addr, c.Password = "h:6379", "pw" }), ""},
		{"redis://u@h", defaults(func(c *driver.Config) { c.Addr, c.Username = "h:6379", "u" }), ""},
		{"redis://:@h", defaults(func(c *driver.Config) { c.Addr = "h:6379" }), ""},
		{"redis://@h", defaults(func(c *driver.Config) { c.Addr = "h:6379" }), ""},
		{"redis://u:p%40ss@h", defaults(func(c *driver.Config) { c.Addr, c.Username, c.Password = "h:6379", "u", "p@ss" }), ""},
		{"redis://u%3Aser:p%3As%2Fs%20%25@h", defaults(func(c *driver.Config) { c.Addr, c.Username, c.Password = "h:6379", "u:ser", "p:s/s %" }), ""},
		{"redis://u:pa:ss@h", defaults(func(c *driver.Config) { c.Addr, c.Username, c.Password = "h:6379", "u", "pa:ss" }), ""},
		{"redis://u:p@ss@h", defaults(func(c *driver.Config) { c.Addr, c.Username, c.Password = "h:6379", "u", "p@ss" }), ""},

		// Hosts and ports.
		{"redis://10.0.0.1", defaults(func(c *driver.Config) { c.Addr = "10.0.0.1:6379" }), ""},
		{"redis://[::1]:6380", defaults(func(c *driver.Config) { c.Addr = "[::1]:6380" }), ""},
		{"redis://[::1]", defaults(func(c *driver.Config) { c.Addr = "[::1]:6379" }), ""},
		{"rediss://[::1]", defaults(func(c *driver.Config) { c.Addr = "[::1]:6379" }), "::1"},
		{"redis://[fe80::1%25eth0]:6380", defaults(func(c *driver.Config) { c.Addr = "[fe80::1%eth0]:6380" }), ""},
		{"redis://h:1", defaults(func(c *driver.Config) { c.Addr = "h:1" }), ""},
		{"redis://h:65535", defaults(func(c *driver.Config) { c.Addr = "h:65535" }), ""},
		// The port in canonical form: the manager finds duplicates by Addr.
		{"redis://h:06379", defaults(func(c *driver.Config) { c.Addr = "h:6379" }), ""},

		// Databases.
		{"redis://h/3", defaults(func(c *driver.Config) { c.Addr, c.DB = "h:6379", 3 }), ""},
		{"redis://h/3/", defaults(func(c *driver.Config) { c.Addr, c.DB = "h:6379", 3 }), ""},
		{"redis://h/0", defaults(func(c *driver.Config) { c.Addr = "h:6379" }), ""},
		{"redis://h?db=4", defaults(func(c *driver.Config) { c.Addr, c.DB = "h:6379", 4 }), ""},
		// The parameter wins over the path, as in go-redis' ParseURL.
		{"redis://h/3?db=4", defaults(func(c *driver.Config) { c.Addr, c.DB = "h:6379", 4 }), ""},

		// Parameters.
		{"redis://h?dial_timeout=50ms&read_timeout=1s&write_timeout=2m&pool_size=7", defaults(func(c *driver.Config) {
			c.Addr, c.DialTimeout, c.ReadTimeout, c.WriteTimeout, c.PoolSize = "h:6379", 50*time.Millisecond, time.Second, 2*time.Minute, 7
		}), ""},
		{"redis://h?dial_timeout=1ns", defaults(func(c *driver.Config) { c.Addr, c.DialTimeout = "h:6379", time.Nanosecond }), ""},
		{"redis://h?reply_limit=1", defaults(func(c *driver.Config) { c.Addr, c.ReplyLimit = "h:6379", 1 }), ""},
		{"redis://h?reply_limit=64MiB", defaults(func(c *driver.Config) { c.Addr, c.ReplyLimit = "h:6379", 64<<20 }), ""},
		{"redis://h?reply_limit=3KiB", defaults(func(c *driver.Config) { c.Addr, c.ReplyLimit = "h:6379", 3<<10 }), ""},
		{"redis://h?reply_limit=1024GiB", defaults(func(c *driver.Config) { c.Addr, c.ReplyLimit = "h:6379", 1<<40 }), ""},
		{"redis://h?reply_limit=none", defaults(func(c *driver.Config) { c.Addr, c.ReplyLimit = "h:6379", -1 }), ""},
		// An empty value keeps the default.
		{"redis://h?db=&dial_timeout=&pool_size=&reply_limit=", defaults(func(c *driver.Config) { c.Addr = "h:6379" }), ""},
		{"rediss://h?tls_server_name=redis.example", defaults(func(c *driver.Config) { c.Addr = "h:6379" }), "redis.example"},
		{"rediss://h?tls_insecure_skip_verify=false", defaults(func(c *driver.Config) { c.Addr = "h:6379" }), "h"},
	} {
		got, err := driver.ParseURL(tc.url)
		if err != nil {
			t.Errorf("ParseURL(%q) = %v", tc.url, err)
			continue
		}
		gotTLS := got.TLS
		got.TLS = nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseURL(%q) = %+v; want %+v", tc.url, *got, *tc.want)
		}
		switch {
		case tc.serverName == "" && gotTLS != nil:
			t.Errorf("ParseURL(%q).TLS = %+v; want nil", tc.url, gotTLS)
		case tc.serverName != "" && gotTLS == nil:
			t.Errorf("ParseURL(%q).TLS = nil; want one for server %q", tc.url, tc.serverName)
		case gotTLS != nil && (gotTLS.ServerName != tc.serverName || gotTLS.MinVersion != tls.VersionTLS12 || gotTLS.InsecureSkipVerify):
			t.Errorf("ParseURL(%q).TLS = {ServerName %q, MinVersion %x, InsecureSkipVerify %v}; want {%q, TLS 1.2, false}",
				tc.url, gotTLS.ServerName, gotTLS.MinVersion, gotTLS.InsecureSkipVerify, tc.serverName)
		}
	}
}

// badURLRow is a URL ParseURL must refuse.
type badURLRow struct {
	url    string
	want   string // in the error
	secret string // the password the URL carries, which the error must not show
}

func TestParseURLErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := writeCert(t, dir, "ca")
	other := writeCert(t, dir, "other")
	q := url.QueryEscape
	for _, tc := range []badURLRow{
		// Schemes.
		{"", `scheme ""`, ""},
		{"localhost:6379", `scheme "localhost"`, ""},
		{"http://u:hunter22@h", `scheme "http"`, "hunter22"},
		{"redisx://:hunter22@h", `scheme "redisx"`, "hunter22"},
		{"tcp+goredis://h", `scheme "tcp+goredis"`, ""},
		{"redis+://:hunter22@h", "names no driver", "hunter22"},
		{"rediss+://h", "names no driver", ""},
		{"redis:h:6379", "want redis://HOST:PORT", ""},
		// User information outside an authority (a slash or two missing).
		{"redis:u:hunter22@h", "user information needs redis://", "hunter22"},
		{"redis:/u:hunter22@h", "user information needs redis://", "hunter22"},
		{"redis:///u:hunter22@h", "user information needs redis://", "hunter22"},
		{"redis//u:hunter22@h", `scheme ""`, "hunter22"},
		{"re dis://u:hunter22@h", `before "://"`, "hunter22"},
		{"://u:hunter22@h", `before "://"`, "hunter22"},
		{"re dis://h", "first path segment", ""},
		{"://h", "missing protocol scheme", ""},

		// Hosts and ports.
		{"redis://:hunter22@h:0", "h:0: port: want a number from 1 to 65535", "hunter22"},
		{"redis://:hunter22@h:65536", "h:65536: port: want a number", "hunter22"},
		{"redis://:hunter22@h:", "port: want a number", "hunter22"},
		{"redis://:hunter22@h:bad", "h:bad: invalid port after host", "hunter22"},
		{"redis://:hunter22@h:-1", "h:-1: invalid port after host", "hunter22"},
		// No host: not localhost by default.
		{"redis://", "redis://: no host", ""},
		{"redis://:6380", "no host", ""},
		{"redis:///15", "redis:///...: no host", ""},
		{"redis+goredis://", "no host", ""},
		{"redis://:hunter22@:6380", "no host", "hunter22"},
		{"redis://:hunter22@h?cluster=true&addr=:7001", "addr parameter 1: no host", "hunter22"},
		{"redis://:hunter22@h?cluster=true&addr=h2&addr=a%20b", "addr parameter 2: host: want a host name", "hunter22"},
		{"redis://:hunter22@::1", "in brackets", "hunter22"},
		{"redis://:hunter22@fe80::1:6380", "in brackets", "hunter22"},
		{"redis://:hunter22@a]b", "want a host name", "hunter22"},
		{"redis://:hunter22@[::1", "missing ']'", "hunter22"},
		{"redis://:hunter22@[]:6380", "host", "hunter22"}, // url.Parse refuses it from Go 1.2x on, ParseURL before
		{"redis://:hunter22@h h", "invalid character", "hunter22"},
		{"redis://:hunter22@h\n", "invalid control character", "hunter22"},
		{"redis://u:hunter%zz22@h", "user information does not parse", "hunter%zz22"},
		{"redis://u:hunter22@h%zz", "redis://xxxxx@...: invalid URL escape", "hunter22"},
		{"redis://u:hun ter22@h", "user information does not parse", "hun ter22"},

		// Databases.
		{"redis://:hunter22@h/abc", "h/...: the database in the path: want a non-negative number", "hunter22"},
		{"redis://:hunter22@h/-1", "the database in the path", "hunter22"},
		{"redis://:hunter22@h/1/2", "the database in the path", "hunter22"},
		{"redis://:hunter22@h?db=x", "h?...: db: want a non-negative number", "hunter22"},
		{"redis://:hunter22@h?db=-2", "db: want a non-negative number", "hunter22"},

		// Parameters.
		{"redis://:hunter22@h?dial_timeout=fast", "dial_timeout: want a positive duration", "hunter22"},
		{"redis://:hunter22@h?dial_timeout=10", "dial_timeout: want a positive duration", "hunter22"},
		{"redis://:hunter22@h?dial_timeout=0", "dial_timeout: want a positive duration", "hunter22"},
		{"redis://:hunter22@h?read_timeout=0s", "read_timeout: want a positive duration", "hunter22"},
		{"redis://:hunter22@h?read_timeout=-1s", "read_timeout: want a positive duration", "hunter22"},
		{"redis://:hunter22@h?write_timeout=-5ms", "write_timeout: want a positive duration", "hunter22"},
		{"redis://:hunter22@h?write_timeout=99999999999h", "write_timeout: want a positive duration", "hunter22"},
		{"redis://:hunter22@h?pool_size=0", "pool_size: want a positive number", "hunter22"},
		{"redis://:hunter22@h?pool_size=-1", "pool_size: want a positive number", "hunter22"},
		{"redis://:hunter22@h?pool_size=x", "pool_size: want a positive number", "hunter22"},
		{"redis://:hunter22@h?reply_limit=0", "reply_limit: want none, or a positive number", "hunter22"},
		{"redis://:hunter22@h?reply_limit=-1", "reply_limit: want none, or a positive number", "hunter22"},
		{"redis://:hunter22@h?reply_limit=16MB", "reply_limit: want none, or a positive number", "hunter22"},
		{"redis://:hunter22@h?reply_limit=1025GiB", "reply_limit: want none, or a positive number", "hunter22"},
		{"redis://:hunter22@h?reply_limit=99999999999999999999", "reply_limit: want none, or a positive number", "hunter22"},
		{"redis://:hunter22@h?timeout=1s", `unknown parameter "timeout"`, "hunter22"},
		{"redis://:hunter22@h?DB=1", `unknown parameter "DB"`, "hunter22"},
		{"redis://:hunter22@h?password=hunter22", `unknown parameter "password"`, "hunter22"},
		{"redis://:hunter22@h?db=1&db=1", `parameter "db" given 2 times`, "hunter22"},
		{"redis://:hunter22@h?db=1&pool_size=2&db=3", `parameter "db" given 2 times`, "hunter22"},
		// Several faults: always the same error, whatever the map order.
		{"redis://h?zz=1&aa=1&tls_ca_file=x", `unknown parameter "aa"`, ""},
		{"redis://:hunter22@h?db=%zz", "query: a '%' that starts no escape", "hunter22"},
		{"redis://:hunter22@h?db=1;pool_size=2", "query: invalid semicolon separator", "hunter22"},
		{"redis://:hunter22@h#frag", "unexpected fragment", "hunter22"},

		// An '@' after a '/', '?' or '#': what may be a password would be
		// taken for the port, path, query or fragment.
		{"redis://:hunter/22@h", "where the user information ends is unclear", "hunter/22"},
		{"redis://:6379?hunter22@h", "where the user information ends is unclear", "6379?hunter22"},
		{"redis://u:hunter#22@h:6379/0", "where the user information ends is unclear", "hunter#22"},
		{"redis://:hunter22@h/0@x", "where the user information ends is unclear", "hunter22@h/0"},
		{"rediss://h/?tls_ca_file=/etc/a@b/ca.pem", "where the user information ends is unclear", "h/?tls_ca_file=/etc/a"},
		{"redis:?hunter22@h", "where the user information ends is unclear", "hunter22"},
		{"redis://:hunter/22@h:bad", "where the user information ends is unclear", "hunter/22"},

		// TLS parameters.
		{"redis://:hunter22@h?tls_ca_file=" + q(ca.certFile), `parameter "tls_ca_file" needs a rediss:// URL`, "hunter22"},
		{"redis+goredis://h?tls_server_name=x", `parameter "tls_server_name" needs a rediss:// URL`, ""},
		{"redis://h?tls_insecure_skip_verify=true", `parameter "tls_insecure_skip_verify" needs a rediss:// URL`, ""},
		{"redis://h?tls_cert_file=a&tls_key_file=b", `parameter "tls_cert_file" needs a rediss:// URL`, ""},
		{"rediss://:hunter22@h?tls_insecure_skip_verify=maybe", "tls_insecure_skip_verify: want true or false", "hunter22"},
		{"rediss://:hunter22@h?tls_ca_file=" + q(filepath.Join(dir, "missing.pem")), "tls_ca_file: open the file: no such file", "hunter22"},
		{"rediss://:hunter22@h?tls_ca_file=" + q(notPEM), "holds no PEM certificate", "hunter22"},
		{"rediss://:hunter22@h?tls_cert_file=" + q(ca.certFile), "tls_cert_file and tls_key_file go together", "hunter22"},
		{"rediss://:hunter22@h?tls_key_file=" + q(ca.keyFile), "tls_cert_file and tls_key_file go together", "hunter22"},
		{"rediss://:hunter22@h?tls_cert_file=" + q(ca.certFile) + "&tls_key_file=" + q(other.keyFile), "client certificate", "hunter22"},
		{"rediss://:hunter22@h?tls_cert_file=" + q(notPEM) + "&tls_key_file=" + q(notPEM), "client certificate", "hunter22"},

		// A password repeated elsewhere, or equal to a word of the message,
		// is scrubbed all the same, escaped forms included.
		{"redis://:hunter22@h/hunter22", "the database in the path", "hunter22"},
		{"redis://:p%40ss%2Fw@h/p%40ss%2Fw", "the database in the path", "p@ss/w"},
		{"redis://:p%40ss@h?p%40ss=1", "unknown parameter, whose name holds characters no parameter has", "p@ss"},
		{"redis://:hunter22@h?hunter22=1", `unknown parameter "xxxxx"`, "hunter22"},
		{"redis://:hunter22@hunter22:1/x", "redis://:xxxxx@xxxxx:1/...", "hunter22"},
		{"redis://:want@h:0", "port: xxxxx a number", "want"},
		{"redis://:port@h:0", "xxxxx: want a number", "port"},
	} {
		checkBadURL(t, tc)
	}
}

// checkBadURL checks that ParseURL refuses tc.url with an error that wraps
// ErrBadURL, says tc.want and does not show the password, in any form.
func checkBadURL(t *testing.T, tc badURLRow) {
	t.Helper()
	cfg, err := driver.ParseURL(tc.url)
	if cfg != nil || !errors.Is(err, driver.ErrBadURL) || !strings.Contains(err.Error(), tc.want) {
		t.Errorf("ParseURL(%q) = %+v, %v; want ErrBadURL saying %q", tc.url, cfg, err, tc.want)
		return
	}
	secrets := []string{tc.secret}
	if u, perr := url.Parse(tc.url); perr == nil && u.User != nil {
		pw, _ := u.User.Password()
		secrets = append(secrets, pw)
	}
	if strings.Contains(tc.url, "@") && tc.secret == "" {
		t.Errorf("row %q: a URL with user information needs its password in the row", tc.url)
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
			if strings.Contains(err.Error(), form) {
				t.Errorf("ParseURL(%q) = %v; the error shows the password (as %q)", tc.url, err, form)
			}
		}
	}
}

// certFiles are the PEM files of a self-signed certificate, valid for
// localhost and 127.0.0.1, that can also sign.
type certFiles struct {
	cert              *x509.Certificate
	certFile, keyFile string
}

func writeCert(t *testing.T, dir, name string) certFiles {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redlock test " + name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := certFiles{cert: cert, certFile: filepath.Join(dir, name+".pem"), keyFile: filepath.Join(dir, name+"-key.pem")}
	if err := os.WriteFile(f.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestParseURLTLS checks the TLS configuration built from files.
func TestParseURLTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := writeCert(t, dir, "ca")
	client := writeCert(t, dir, "client")
	q := url.QueryEscape

	cfg, err := driver.ParseURL("rediss+goredis://:pw@localhost:6380/2?tls_ca_file=" + q(ca.certFile) +
		"&tls_cert_file=" + q(client.certFile) + "&tls_key_file=" + q(client.keyFile))
	if err != nil {
		t.Fatalf("ParseURL with CA and client certificate: %v", err)
	}
	if cfg.TLS == nil || cfg.TLS.RootCAs == nil || cfg.TLS.ServerName != "localhost" || cfg.TLS.InsecureSkipVerify {
		t.Fatalf("ParseURL with a CA file: TLS = %+v; want RootCAs and ServerName localhost", cfg.TLS)
	}
	// The pool trusts the CA, and only it.
	if _, err := ca.cert.Verify(x509.VerifyOptions{Roots: cfg.TLS.RootCAs, DNSName: "localhost"}); err != nil {
		t.Errorf("the CA from tls_ca_file does not verify with RootCAs: %v", err)
	}
	if _, err := client.cert.Verify(x509.VerifyOptions{Roots: cfg.TLS.RootCAs, DNSName: "localhost"}); err == nil {
		t.Errorf("a certificate the CA did not sign verifies with RootCAs")
	}
	if n := len(cfg.TLS.Certificates); n != 1 {
		t.Fatalf("ParseURL with tls_cert_file and tls_key_file: %d client certificates; want 1", n)
	}
	if leaf, err := x509.ParseCertificate(cfg.TLS.Certificates[0].Certificate[0]); err != nil || !leaf.Equal(client.cert) {
		t.Errorf("client certificate = %v, %v; want the one from tls_cert_file", leaf, err)
	}
	if cfg.Driver != "goredis" || cfg.Addr != "localhost:6380" || cfg.Password != "pw" || cfg.DB != 2 {
		t.Errorf("ParseURL with TLS = %+v; want driver goredis, localhost:6380, password, db 2", *cfg)
	}

	cfg, err = driver.ParseURL("rediss://127.0.0.1:6380?tls_insecure_skip_verify=true&tls_server_name=redis.internal")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.TLS.InsecureSkipVerify || cfg.TLS.ServerName != "redis.internal" || cfg.TLS.RootCAs != nil || cfg.TLS.Certificates != nil {
		t.Errorf("ParseURL(skip verify, server name) TLS = %+v; want InsecureSkipVerify and ServerName redis.internal, no files", cfg.TLS)
	}
}

// TestURLErrorsNeverQuotePassword checks that ParseURL's errors, and
// Redact, show no part of a password that url.Parse would split elsewhere
// than at the user information, or refuse: the message does not change with
// the password.
func TestURLErrorsNeverQuotePassword(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "goredis"} {
		dlmtest.TestURLErrors(t, name, func(rawURL string) error {
			_, err := driver.ParseURL(rawURL)
			return err
		})
		for _, u := range dlmtest.BadURLs(name) {
			got, other := driver.Redact(u.URL), driver.Redact(u.Other)
			if problem := dlmtest.CheckURLError(u, errors.New(got), errors.New(other)); problem != "" {
				t.Errorf("Redact(%q) = %q: %s", u.URL, got, problem)
			}
		}
	}
}

// FuzzParseURL checks that ParseURL never panics, that what it accepts has a
// usable address, and that what it refuses wraps ErrBadURL without showing
// the password: for URLs url.Parse accepts, the password it finds, in no
// form (dlmtest.ShownSecret: as written, percent-encoded, quoted by %q, or
// read back from any mixture of escapes), and no value of a parameter
// named like a password; for URLs it refuses, what lies between the first
// ':' of the user information and its last '@', in no form either; and for
// every URL, any run of letters and digits of what may be a password (see
// shownPasswordRun), whatever url.Parse made of it.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"redis://localhost:6379",
		"rediss+goredis://user:p%40ss@[::1]:6380/3?dial_timeout=50ms&pool_size=4",
		"redis://:hunter22@h:0",
		"redis:u:hunter22@h",
		"redis://u:hunter22@h/hunter22?db=1",
		"rediss://h?tls_ca_file=testdata/none.pem&tls_server_name=x",
		"redis://:1234/Secretpart@h:6379",
		"redis://:Kx7Pq/rest@h",
		"redis://:S3%22cr%5Ce@h?cluster=true&addr=S3%22cr%5Ce",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		u, perr := url.Parse(in)
		if perr == nil && readsOutsideTestdata(u) {
			return // a fuzzed path such as /dev/zero would read forever
		}
		cfg, err := driver.ParseURL(in)
		if err == nil {
			host, port, serr := net.SplitHostPort(cfg.Addr)
			n, aerr := strconv.Atoi(port)
			if serr != nil || host == "" || aerr != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
				t.Fatalf("ParseURL(%q).Addr = %q; want host:port with a port from 1 to 65535", in, cfg.Addr)
			}
			if cfg.DB < 0 || cfg.PoolSize < 0 || cfg.DialTimeout <= 0 || cfg.ReadTimeout <= 0 || cfg.WriteTimeout <= 0 {
				t.Fatalf("ParseURL(%q) = %+v; want a non-negative database and pool, positive timeouts", in, *cfg)
			}
			return
		}
		if cfg != nil || !errors.Is(err, driver.ErrBadURL) {
			t.Fatalf("ParseURL(%q) = %v, %v; want nil and an error wrapping ErrBadURL", in, cfg, err)
		}
		if run := shownPasswordRun(in, parseError); run != "" {
			t.Fatalf("ParseURL(%q) = %v; the error shows %q of what may be the password", in, err, run)
		}
		for _, secret := range fuzzSecrets(in, u, perr) {
			// A secret with an 'x' could be made up of the Redacted
			// placeholder and its neighbours.
			if len(secret) < 4 || strings.Contains(secret, "x") {
				continue
			}
			if form := dlmtest.ShownSecret(err.Error(), secret); form != "" {
				t.Fatalf("ParseURL(%q) = %v; the error shows the secret %q (as %q)", in, err, secret, form)
			}
		}
	})
}

// fuzzSecrets returns what no error about in may show: the password
// url.Parse finds, and the values of parameters whose names say they are
// secrets; or, when url.Parse refuses in (perr), what lies between the
// first ':' of its user information and its last '@', as written and
// decoded.
func fuzzSecrets(in string, u *url.URL, perr error) []string {
	if perr != nil {
		start, end, ok := passwordPart(in)
		if !ok {
			return nil
		}
		out := []string{in[start:end]}
		if dec, err := url.PathUnescape(in[start:end]); err == nil {
			out = append(out, dec)
		}
		return out
	}
	var out []string
	if u.User != nil {
		pw, _ := u.User.Password()
		out = append(out, pw)
	}
	q, _ := url.ParseQuery(u.RawQuery)
	for k, vs := range q {
		if k := strings.ToLower(k); strings.Contains(k, "pass") || strings.Contains(k, "secret") || strings.Contains(k, "auth") {
			out = append(out, vs...)
		}
	}
	return out
}

// passwordPart returns where what may be the password of in lies: after
// the first ':' of what lies between the "://" (or the start) and the last
// '@'. ok is false when in has no such part.
func passwordPart(in string) (start, end int, ok bool) {
	end = strings.LastIndex(in, "@")
	if end < 0 {
		return 0, 0, false
	}
	from := 0
	if i := strings.Index(in[:end], "://"); i >= 0 {
		from = i + len("://")
	}
	i := strings.Index(in[from:end], ":")
	if i < 0 {
		return 0, 0, false
	}
	return from + i + 1, end, true
}

// shownPasswordRun returns a run of three or more letters and digits of
// the password part of in (passwordPart) that show(in) holds, or "" when it
// holds none. show returns an error message, or a redacted URL, and false
// when it has none to give. A run counts as shown when show(in) holds it
// and show of in with that part replaced by dlmtest.OtherPassword of it
// holds the run's replacement: then it came from the password, not from
// the message's words or the rest of the URL.
func shownPasswordRun(in string, show func(string) (string, bool)) string {
	start, end, ok := passwordPart(in)
	if !ok {
		return ""
	}
	other := in[:start] + dlmtest.OtherPassword(in[start:end]) + in[end:]
	if u, perr := url.Parse(other); perr == nil && readsOutsideTestdata(u) {
		return ""
	}
	msg, ok := show(in)
	otherMsg, otherOK := show(other)
	if !ok || !otherOK {
		return ""
	}
	outside := in[:start] + "\x00" + in[end:]
	part := in[start:end]
	for i := 0; i < len(part); {
		j := i
		for j < len(part) && isAlnum(part[j]) {
			j++
		}
		run, changed := part[i:j], other[start+i:start+j]
		if len(run) >= 3 && run != changed && !strings.Contains(outside, run) && !strings.Contains(in, changed) &&
			strings.Contains(msg, run) && strings.Contains(otherMsg, changed) {
			return run
		}
		i = j + 1
	}
	return ""
}

// parseError is ParseURL's error message about s, for shownPasswordRun.
func parseError(s string) (string, bool) {
	_, err := driver.ParseURL(s)
	if err == nil {
		return "", false
	}
	return err.Error(), true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// readsOutsideTestdata reports whether u names a TLS file outside testdata/.
func readsOutsideTestdata(u *url.URL) bool {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return false
	}
	for _, k := range []string{"tls_ca_file", "tls_cert_file", "tls_key_file"} {
		for _, v := range q[k] {
			if v != "" && (!strings.HasPrefix(v, "testdata/") || strings.Contains(v, "..")) {
				return true
			}
		}
	}
	return false
}
