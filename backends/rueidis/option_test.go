package rueidis

import (
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

func TestClientOption(t *testing.T) {
	t.Parallel()
	type want struct {
		addr, user, password string
		db                   int
		dial, write          time.Duration
		tls, skipVerify      bool
		serverName           string
	}
	def := func(w want) want {
		if w.dial == 0 {
			w.dial = driver.DefaultDialTimeout
		}
		if w.write == 0 {
			w.write = driver.DefaultWriteTimeout
		}
		return w
	}
	for _, tc := range []struct {
		url  string
		want want
	}{
		{"redis+rueidis://127.0.0.1:6379", want{addr: "127.0.0.1:6379"}},
		{"redis+rueidis://localhost", want{addr: "localhost:6379"}},
		{"redis+rueidis://alice:s3cret@10.0.0.1:7000", want{addr: "10.0.0.1:7000", user: "alice", password: "s3cret"}},
		{"redis+rueidis://:s3cret@h:1", want{addr: "h:1", password: "s3cret"}},
		{"redis+rueidis://h:1/3", want{addr: "h:1", db: 3}},
		{"redis+rueidis://h:1?db=5", want{addr: "h:1", db: 5}},
		{"redis+rueidis://h:1?dial_timeout=50ms&write_timeout=70ms&read_timeout=1s",
			want{addr: "h:1", dial: 50 * time.Millisecond, write: 70 * time.Millisecond}},
		{"redis+rueidis://h:1?pool_size=7", want{addr: "h:1"}},
		{"rediss+rueidis://u:p@redis.example:6380/2", want{addr: "redis.example:6380", user: "u", password: "p", db: 2, tls: true, serverName: "redis.example"}},
		{"rediss+rueidis://10.0.0.9:6380?tls_insecure_skip_verify=true&tls_server_name=cache",
			want{addr: "10.0.0.9:6380", tls: true, skipVerify: true, serverName: "cache"}},
	} {
		cfg, err := driver.ParseURL(tc.url)
		if err != nil {
			t.Fatalf("ParseURL(%q): %v", tc.url, err)
		}
		opt, w := clientOption(adapterkit.NewClientOptions(cfg)), def(tc.want)
		check := func(field string, got, want any) {
			t.Helper()
			if got != want {
				t.Errorf("clientOption(%q).%s = %v; want %v", tc.url, field, got, want)
			}
		}
		if len(opt.InitAddress) != 1 {
			t.Fatalf("clientOption(%q).InitAddress = %q; want one address", tc.url, opt.InitAddress)
		}
		check("InitAddress[0]", opt.InitAddress[0], w.addr)
		check("Username", opt.Username, w.user)
		check("Password", opt.Password, w.password)
		check("SelectDB", opt.SelectDB, w.db)
		check("Dialer.Timeout", opt.Dialer.Timeout, w.dial)
		check("ConnWriteTimeout", opt.ConnWriteTimeout, w.write)
		check("DisableCache", opt.DisableCache, true)
		check("ForceSingleClient", opt.ForceSingleClient, true)
		check("AlwaysPipelining", opt.AlwaysPipelining, true)
		check("TLSConfig != nil", opt.TLSConfig != nil, w.tls)
		if opt.TLSConfig != nil {
			check("TLSConfig.InsecureSkipVerify", opt.TLSConfig.InsecureSkipVerify, w.skipVerify)
			check("TLSConfig.ServerName", opt.TLSConfig.ServerName, w.serverName)
		}
	}
}
