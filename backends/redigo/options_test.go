package redigo

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

func TestConnOptions(t *testing.T) {
	t.Parallel()
	defaultPool := 10 * runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		url               string
		addr              string
		auth              []any
		db, poolSize      int
		dial, read, write time.Duration
		tls, skipVerify   bool
		tlsServerName     string
	}{
		{url: "redis+redigo://10.0.0.1:6380", addr: "10.0.0.1:6380"},
		{url: "redis://localhost", addr: "localhost:6379"},
		{url: "redis+redigo://:s3cret@h:1/2", addr: "h:1", auth: []any{"s3cret"}, db: 2},
		{url: "redis+redigo://alice:pw@h:1?db=5", addr: "h:1", auth: []any{"alice", "pw"}, db: 5},
		{url: "redis+redigo://alice@h:1", addr: "h:1"},
		{
			url:  "redis+redigo://h:1?dial_timeout=50ms&read_timeout=70ms&write_timeout=90ms&pool_size=7",
			addr: "h:1", dial: 50 * time.Millisecond, read: 70 * time.Millisecond, write: 90 * time.Millisecond, poolSize: 7,
		},
		{url: "rediss+redigo://h:1?tls_insecure_skip_verify=true", addr: "h:1", tls: true, skipVerify: true, tlsServerName: "h"},
		{url: "rediss+redigo://h:1?tls_server_name=redis.example", addr: "h:1", tls: true, tlsServerName: "redis.example"},
	} {
		cfg, err := driver.ParseURL(tc.url)
		if err != nil {
			t.Fatalf("ParseURL(%q): %v", tc.url, err)
		}
		o := newConnOptions(cfg)
		if tc.dial == 0 {
			tc.dial, tc.read, tc.write = driver.DefaultDialTimeout, driver.DefaultReadTimeout, driver.DefaultWriteTimeout
		}
		if tc.poolSize == 0 {
			tc.poolSize = defaultPool
		}
		if o.addr != tc.addr || !reflect.DeepEqual(o.auth, tc.auth) || o.db != tc.db || o.poolSize != tc.poolSize {
			t.Errorf("newConnOptions(%q) = addr %q auth %q db %d pool %d; want %q %q %d %d",
				tc.url, o.addr, o.auth, o.db, o.poolSize, tc.addr, tc.auth, tc.db, tc.poolSize)
		}
		if o.dialTimeout != tc.dial || o.readTimeout != tc.read || o.writeTimeout != tc.write {
			t.Errorf("newConnOptions(%q) timeouts = dial %v read %v write %v; want %v %v %v",
				tc.url, o.dialTimeout, o.readTimeout, o.writeTimeout, tc.dial, tc.read, tc.write)
		}
		if (o.tls != nil) != tc.tls {
			t.Errorf("newConnOptions(%q).tls = %v; want TLS %v", tc.url, o.tls, tc.tls)
		} else if tc.tls && (o.tls.InsecureSkipVerify != tc.skipVerify || o.tls.ServerName != tc.tlsServerName) {
			t.Errorf("newConnOptions(%q).tls: InsecureSkipVerify %v, ServerName %q; want %v, %q",
				tc.url, o.tls.InsecureSkipVerify, o.tls.ServerName, tc.skipVerify, tc.tlsServerName)
		}
		p := o.pool()
		if p.MaxActive != tc.poolSize || p.MaxIdle != tc.poolSize || !p.Wait || p.DialContext == nil {
			t.Errorf("pool for %q: MaxActive %d, MaxIdle %d, Wait %v, DialContext set %v; want %d, %d, true, true",
				tc.url, p.MaxActive, p.MaxIdle, p.Wait, p.DialContext != nil, tc.poolSize, tc.poolSize)
		}
	}
}

func TestOpenBadURL(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"redis+redigo://u:s3cret@h:notaport",
		"redis+redigo://u:s3cret@h:1/x",
		"redis+redigo://u:s3cret@h:1?pool_size=-1",
		"redis+redigo://u:s3cret@h:1?bogus=1",
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
