package driver_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"redis://h:6379", "redis://h:6379"},
		{"redis://u:hunter22@h:6379/0", "redis://u:xxxxx@h:6379/0"},
		{"redis://:hunter22@h", "redis://:xxxxx@h"},
		{"rediss+goredis://u:p%40ss@[::1]:6380/2?db=1&tls_server_name=x", "rediss+goredis://u:xxxxx@[::1]:6380/2?db=1&tls_server_name=x"},
		{"redis://u:p@ss@h", "redis://u:xxxxx@h"},
		// A user without a password is not a secret.
		{"redis://u@h", "redis://u@h"},
		{"redis://:@h", "redis://:xxxxx@h"},
		// An '@' after a '/', '?' or '#' may end a password that holds
		// one: everything before it goes, whatever url.Parse made of it.
		{"rediss://h/?tls_ca_file=/etc/a@b/ca.pem", "rediss://xxxxx@b/ca.pem"},
		{"redis://:1234/Secretpart@h:6379", "redis://xxxxx@h:6379"},
		{"redis://:Kx7Pq/rest@h", "redis://xxxxx@h"},
		{"redis://u:p?q#r@h", "redis://xxxxx@h"},
		{"rediss://user:a#b@h:1/0", "rediss://xxxxx@h:1/0"},
		{"redis://u:p@x/y@h", "redis://xxxxx@h"},
		{"//u:hunter22@h", "xxxxx@h"},
		// The user name is kept where the parser saw the user information
		// whole, as written.
		{"redis://us%65r:hunter22@h", "redis://us%65r:xxxxx@h"},
		{"redis://u:hunter22@h/0?db=1", "redis://u:xxxxx@h/0?db=1"},
		// Strings that do not parse are cut at their last '@'.
		{"redis://u:hunter22@h:bad", "redis://xxxxx@h:bad"},
		{"redis://u:hunter%zz22@h", "redis://xxxxx@h"},
		{"redis://u:hunter22@h\n", "redis://xxxxx@h\n"},
		{"redis://u:hunter22@h/%zz@x", "redis://xxxxx@x"},
		{"%zz://u:hunter22@h", "xxxxx@h"},
		{"re dis:u:hunter22://w@h", "xxxxx@h"},
		{"redis://h:bad", "redis://h:bad"},
		// So is user information outside an authority.
		{"redis:u:hunter22@h", "redis:xxxxx@h"},
		{"redis:/u:hunter22@h", "redis:xxxxx@h"},
		{"redis:///u:hunter22@h", "redis://xxxxx@h"},
		{"u:hunter22@h", "u:xxxxx@h"},
		{"hunter22@h", "xxxxx@h"},
	} {
		if got := driver.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"redis://h:1", "redis://h:1"},
		{"rediss+goredis://u:hunter22@h:1/2?tls_ca_file=a.pem", "rediss+goredis://u:xxxxx@h:1/..."},
		{"redis://:hunter22@h?password=hunter22", "redis://:xxxxx@h?..."},
		{"redis://h#frag", "redis://h#..."},
		{"redis://:hunter22@hunter22:1", "redis://:xxxxx@xxxxx:1"},
		{"redis://:p%40ss@h:1", "redis://:xxxxx@h:1"},
		{"redis://u@h", "redis://u@h"},
		{"redis://", "redis://"},
		// Not parsed: the scheme, and a user name and host of plain
		// characters only.
		{"redis://:hunter/22@h:1?x=hunter/22", "redis://xxxxx@h:1?..."},
		{"redis://u:hunter22@h%zz:1", "redis://xxxxx@..."},
		{"redis://u:hunter22@h:bad/0", "redis://xxxxx@h:bad/..."},
		{"re dis://u:hunter22@h", "xxxxx@h"},
	} {
		if got := driver.RedactOrigin(tc.in); got != tc.want {
			t.Errorf("RedactOrigin(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// quotingError stands for a client library's error type.
type quotingError struct{ url string }

func (e *quotingError) Error() string { return "redis: invalid URL " + e.url }

func TestRedactError(t *testing.T) {
	t.Parallel()
	const pw = "p@ss/w rd%"
	for _, tc := range []struct {
		name     string
		password string
		msg      string // of the error given
		want     string // of the error returned
	}{
		{"plain", "hunter22", "auth hunter22 failed: hunter22", "auth xxxxx failed: xxxxx"},
		{"in a raw URL, query-escaped", pw, "url redis://:p%40ss%2Fw+rd%25@h", "url redis://:xxxxx@h"},
		{"path-escaped", pw, "path /p@ss%2Fw%20rd%25/x", "path /xxxxx/x"},
		{"user-information-escaped", pw, "userinfo :p%40ss%2Fw%20rd%25@", "userinfo :xxxxx@"},
		{"lower-case hex", pw, "url redis://:p%40ss%2fw+rd%25@h", "url redis://:xxxxx@h"},
		{"plain with specials", pw, `password "p@ss/w rd%"`, `password "xxxxx"`},
		{"several forms", pw, "p@ss/w rd% p%40ss%2Fw+rd%25", "xxxxx xxxxx"},
	} {
		sentinel := errors.New(tc.msg)
		err := fmt.Errorf("%w", sentinel)
		got := driver.RedactError(err, tc.password)
		if got.Error() != tc.want {
			t.Errorf("RedactError(%s: %q, %q) = %q; want %q", tc.name, tc.msg, tc.password, got, tc.want)
		}
		if !errors.Is(got, sentinel) {
			t.Errorf("RedactError(%s): errors.Is loses the original error", tc.name)
		}
	}

	// The chain is kept for errors.Is and errors.As.
	inner := &quotingError{url: "redis://:hunter22@h:bad"}
	got := driver.RedactError(fmt.Errorf("open: %w: %w", fs.ErrNotExist, inner), "hunter22")
	var qe *quotingError
	if !errors.Is(got, fs.ErrNotExist) || !errors.As(got, &qe) || qe != inner {
		t.Errorf("RedactError = %v; want errors.Is(fs.ErrNotExist) and errors.As(*quotingError)", got)
	}
	if strings.Contains(got.Error(), "hunter22") {
		t.Errorf("RedactError = %q; want the password gone", got)
	}

	// Nothing to do: the same error comes back.
	plain := errors.New("connection refused")
	for _, password := range []string{"", "hunter22"} {
		if got := driver.RedactError(plain, password); got != plain {
			t.Errorf("RedactError(%q, %q) = %#v; want the error itself", plain, password, got)
		}
	}
	if got := driver.RedactError(nil, "hunter22"); got != nil {
		t.Errorf("RedactError(nil) = %v; want nil", got)
	}
}

// FuzzRedact checks that Redact never panics, leaves strings without user
// information alone, and never shows the password of a URL that has one,
// nor, whatever url.Parse makes of a string, any part of what may be its
// password (see shownPasswordRun).
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"redis://u:hunter22@h:6379/0?db=1",
		"redis://u:p%40ss@[::1]:6380",
		"redis://u:hunter22@h:bad",
		"redis:u:hunter22@h",
		"re dis:u:hunter22://w@h",
		"redis://:Kx7Pq/rest@h",
		"redis://:6379?db=Zx5@h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := driver.Redact(in)
		if run := shownPasswordRun(in, func(s string) (string, bool) { return driver.Redact(s), true }); run != "" {
			t.Fatalf("Redact(%q) = %q; it shows %q of what may be the password", in, out, run)
		}
		if !strings.Contains(in, "@") {
			if out != in {
				t.Fatalf("Redact(%q) = %q; want it unchanged, it has no user information", in, out)
			}
			return
		}
		u, err := url.Parse(in)
		if err != nil {
			// Cut at the last '@': nothing before it is kept but the
			// scheme.
			if !strings.HasSuffix(out, driver.Redacted+"@"+in[strings.LastIndex(in, "@")+1:]) || strings.Count(out, "@") != 1 {
				t.Fatalf("Redact(%q) = %q; want it cut at the last '@'", in, out)
			}
			return
		}
		if u.User == nil {
			return
		}
		pw, has := u.User.Password()
		if !has || len(pw) < 4 || strings.Contains(pw, "x") {
			return // too short to tell, or could be made of the placeholder
		}
		// Where the password also occurs outside the user information,
		// it is not Redact's to hide.
		ref := *u
		ref.User = url.UserPassword(u.User.Username(), "\x00")
		if strings.Contains(ref.String(), pw) || strings.Contains(u.User.Username(), pw) {
			return
		}
		if strings.Contains(out, pw) {
			t.Fatalf("Redact(%q) = %q; it shows the password %q", in, out, pw)
		}
	})
}
