package goredis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

func TestClientOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url               string
		addr, user, pass  string
		db, poolSize      int
		dial, read, write time.Duration
		tls, skipVerify   bool
		tlsServerName     string
	}{
		{url: "redis+goredis://10.0.0.1:6380", addr: "10.0.0.1:6380"},
		{url: "redis://localhost", addr: "localhost:6379"},
		{url: "redis+goredis://:s3cret@h:1/2", addr: "h:1", pass: "s3cret", db: 2},
		{url: "redis+goredis://alice:pw@h:1?db=5", addr: "h:1", user: "alice", pass: "pw", db: 5},
		{
			url:  "redis+goredis://h:1?dial_timeout=50ms&read_timeout=70ms&write_timeout=90ms&pool_size=7",
			addr: "h:1", dial: 50 * time.Millisecond, read: 70 * time.Millisecond, write: 90 * time.Millisecond, poolSize: 7,
		},
		{url: "rediss+goredis://h:1?tls_insecure_skip_verify=true", addr: "h:1", tls: true, skipVerify: true, tlsServerName: "h"},
		{url: "rediss+goredis://h:1?tls_server_name=redis.example", addr: "h:1", tls: true, tlsServerName: "redis.example"},
	} {
		cfg, err := driver.ParseURL(tc.url)
		if err != nil {
			t.Fatalf("ParseURL(%q): %v", tc.url, err)
		}
		o := clientOptions(cfg)
		if tc.dial == 0 {
			tc.dial, tc.read, tc.write = driver.DefaultDialTimeout, driver.DefaultReadTimeout, driver.DefaultWriteTimeout
		}
		if o.Addr != tc.addr || o.Username != tc.user || o.Password != tc.pass || o.DB != tc.db || o.PoolSize != tc.poolSize {
			t.Errorf("clientOptions(%q) = addr %q user %q password %q db %d pool %d; want %q %q %q %d %d",
				tc.url, o.Addr, o.Username, o.Password, o.DB, o.PoolSize, tc.addr, tc.user, tc.pass, tc.db, tc.poolSize)
		}
		if o.DialTimeout != tc.dial || o.ReadTimeout != tc.read || o.WriteTimeout != tc.write {
			t.Errorf("clientOptions(%q) timeouts = dial %v read %v write %v; want %v %v %v",
				tc.url, o.DialTimeout, o.ReadTimeout, o.WriteTimeout, tc.dial, tc.read, tc.write)
		}
		if !o.ContextTimeoutEnabled || o.MaxRetries != -1 || o.Dialer == nil {
			t.Errorf("clientOptions(%q): ContextTimeoutEnabled %v, MaxRetries %d, Dialer set %v; want true, -1, true",
				tc.url, o.ContextTimeoutEnabled, o.MaxRetries, o.Dialer != nil)
		}
		if (o.TLSConfig != nil) != tc.tls {
			t.Errorf("clientOptions(%q).TLSConfig = %v; want TLS %v", tc.url, o.TLSConfig, tc.tls)
		} else if tc.tls && (o.TLSConfig.InsecureSkipVerify != tc.skipVerify || o.TLSConfig.ServerName != tc.tlsServerName) {
			t.Errorf("clientOptions(%q).TLSConfig: InsecureSkipVerify %v, ServerName %q; want %v, %q",
				tc.url, o.TLSConfig.InsecureSkipVerify, o.TLSConfig.ServerName, tc.skipVerify, tc.tlsServerName)
		}
	}
}

func TestOpenBadURL(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"redis+goredis://u:s3cret@h:notaport",
		"redis+goredis://u:s3cret@h:1/x",
		"redis+goredis://u:s3cret@h:1?pool_size=-1",
		"redis+goredis://u:s3cret@h:1?bogus=1",
		"http://u:s3cret@h:1",
	} {
		n, err := Driver{}.Open(url)
		if err == nil {
			n.Close()
			t.Errorf("Open(%q) = nil error; want one", url)
			continue
		}
		if !errors.Is(err, driver.ErrBadURL) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) = %v; want an ErrBadURL without the password", url, err)
		}
	}
}
