package driver_test

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
)

// quotedSecret holds every kind of character that %q escapes: a double
// quote, a backslash, a tab, and bytes of 0x80 and above (ö, and a byte
// that is no UTF-8). Each URL below carries it percent-encoded.
const quotedSecret = "S3\"cr\\e\tt\u00f6\xffN0"

// TestURLErrorsShowNoParameterValue checks that ParseURL's errors name a
// parameter that is wrong, never its value, nor the URL's query, path or
// fragment: a password given as a parameter (password=,
// sentinel_password=), or repeated in the database, a parameter or a file
// name, shows in no form, as written, escaped or quoted, whatever
// characters it holds.
func TestURLErrorsShowNoParameterValue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := url.QueryEscape(quotedSecret)
	p := url.PathEscape(quotedSecret)
	u := url.UserPassword("u", quotedSecret).String() + "@h:6379"
	for _, tc := range []struct {
		url  string
		want string // in the error
	}{
		// A password as a parameter: ParseURL knows none, and refuses it
		// by its name.
		{"redis://h:6379?password=" + e, `unknown parameter "password"`},
		{"redis://h:6379?sentinel_password=" + e + "&sentinel_master=m", `unknown parameter "sentinel_password"`},
		{"redis://h:6379?db=1&requirepass=" + e, `unknown parameter "requirepass"`},
		{"redis://" + u + "?auth=" + e, `unknown parameter "auth"`},
		// The password repeated where a value is refused.
		{"redis://" + u + "/" + p, "database"},
		{"redis://" + u + "?db=" + e, "db"},
		{"redis://" + u + "?dial_timeout=" + e, "dial_timeout"},
		{"redis://" + u + "?read_timeout=" + e, "read_timeout"},
		{"redis://" + u + "?pool_size=" + e, "pool_size"},
		{"redis://" + u + "?cluster=" + e, "cluster"},
		{"rediss://" + u + "?tls_insecure_skip_verify=" + e, "tls_insecure_skip_verify"},
		{"redis://" + u + "?cluster=true&addr=" + e, "addr"},
		// In a file name.
		{"rediss://" + u + "?tls_ca_file=" + url.QueryEscape(filepath.Join(dir, quotedSecret+".pem")), "tls_ca_file"},
		{"rediss://" + u + "?tls_cert_file=" + url.QueryEscape(filepath.Join(dir, quotedSecret+".pem")) +
			"&tls_key_file=" + url.QueryEscape(filepath.Join(dir, quotedSecret+".key")), "client certificate"},
		// Elsewhere in a refused URL: a fragment, a parameter's name, a
		// value beside the fault.
		{"redis://" + u + "#" + p, "fragment"},
		{"redis://" + u + "?" + e + "=1", "unknown parameter"},
		{"redis://" + u + "?tls_server_name=" + e, `parameter "tls_server_name" needs a rediss:// URL`},
		{"redis://" + u + "?sentinel_master=" + e + "&cluster=true", "exclude each other"},
	} {
		cfg, err := driver.ParseURL(tc.url)
		if err == nil {
			t.Errorf("ParseURL(%q) = %+v; want an error", tc.url, cfg)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("ParseURL(%q) = %v; want it to say %q", tc.url, err, tc.want)
		}
		if form := dlmtest.ShownSecret(msg, quotedSecret); form != "" {
			t.Errorf("ParseURL(%q) = %v; it shows the secret as %q", tc.url, err, form)
		}
	}
}
