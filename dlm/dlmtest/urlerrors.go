package dlmtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// BadURL is a node URL that must be refused, with the password it carries
// and the same URL with another password of the same shape.
type BadURL struct {
	URL      string
	Password string
	Other    string // URL with OtherPassword(Password) instead
}

// badURLParts are the user, password and what follows the '@' of BadURLs,
// and whether the URL is rediss://. Each password holds a '/', '?' or '#'
// that is not percent-encoded, or something else url.Parse refuses in user
// information, as base64 and generated passwords often do; so the parser
// splits the URL elsewhere than at the user information, or refuses it.
var badURLParts = []struct {
	user, password, rest string
	tls                  bool
}{
	{"", "1234/Secretpart", "h:6379", false}, // a port, then a path
	{"", "Kx7Pq/rest", "h", false},           // a bad port
	{"u", "p?q#r", "h", false},               // a query, then a fragment
	{"user", "a#b", "h:1/0", true},           // a fragment
	{"", "Zq3+Vb8/Yt2K9=", "h:6379", false},  // base64
	{"u", "9f8e/7d6c", "h:6379/2", false},    // a good port, then a path
	{"", "6379?db=Zx5", "h", false},          // a good port, then a query
	{"", "6379#Fr4g", "h", false},            // a good port, then a fragment
	{"", "Ab3@Cd4/Ef5", "h", false},          // an '@' before the '/'
	{"", "Pa55/w0rd", "h:bad", false},        // and a bad port after the '@'
	{"", "Pa55 w0rd", "h", false},            // a space
	{"admin", "Qz9%zzRt7", "h", false},       // an escape that is none
}

// BadURLs returns malformed node URLs whose passwords url.Parse would not
// take for a password, with "redis" or "rediss" as their scheme, followed
// by "+" and driverName unless it is "". The hosts are never dialled: every
// URL must be refused before.
func BadURLs(driverName string) []BadURL {
	out := make([]BadURL, 0, len(badURLParts))
	for _, p := range badURLParts {
		scheme := "redis"
		if p.tls {
			scheme = "rediss"
		}
		if driverName != "" {
			scheme += "+" + driverName
		}
		prefix := scheme + "://" + p.user + ":"
		out = append(out, BadURL{
			URL:      prefix + p.password + "@" + p.rest,
			Password: p.password,
			Other:    prefix + OtherPassword(p.password) + "@" + p.rest,
		})
	}
	return out
}

// OtherPassword returns password with each letter and digit but 0 replaced
// by the next one (z by a, 9 by 1), and everything else kept, percent
// escapes whole: a password of the same shape, which a parser splits in the
// same places, but that shares no piece with password.
func OtherPassword(password string) string {
	b := []byte(password)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '%':
			i += 2 // an escape, or what url.Parse checks as one
		case c == 'z', c == 'Z':
			b[i] -= 'z' - 'a'
		case c == '9':
			b[i] = '1'
		case 'a' <= c && c < 'z', 'A' <= c && c < 'Z', '1' <= c && c < '9':
			b[i]++
		}
	}
	return string(b)
}

// CheckURLError returns what is wrong with err and otherErr, the errors
// that refused u.URL and u.Other, or "" when nothing is: both are errors,
// with the same message, which therefore quotes nothing of the password;
// nor does it hold the password or any run of four or more of its letters
// and digits.
func CheckURLError(u BadURL, err, otherErr error) string {
	if err == nil || otherErr == nil {
		return fmt.Sprintf("accepted: %v; with another password: %v", err, otherErr)
	}
	msg := err.Error()
	if otherErr.Error() != msg {
		return fmt.Sprintf("the error depends on the password: %q; with another password: %q", msg, otherErr)
	}
	runs := strings.FieldsFunc(u.Password, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for _, s := range append(runs, u.Password) {
		if len(s) >= 4 && strings.Contains(msg, s) {
			return fmt.Sprintf("the error shows %q of the password: %q", s, msg)
		}
	}
	return ""
}

// TestURLErrors checks that open refuses each of [BadURLs](driverName)
// with an error wrapping [driver.ErrBadURL], and so matching
// [dlm.ErrInvalid], that quotes no part of the password, whatever url.Parse
// made of it. open is ParseURL, or what
// calls it on a node URL: [dlm.Open], [dlm.OpenNode], a driver's Open.
// It returns the error, or nil when it accepted the URL (and closed what
// it opened).
func TestURLErrors(t *testing.T, driverName string, open func(rawURL string) error) {
	t.Helper()
	for _, u := range BadURLs(driverName) {
		err, otherErr := open(u.URL), open(u.Other)
		if problem := CheckURLError(u, err, otherErr); problem != "" {
			t.Errorf("open(%q): %s", u.URL, problem)
			continue
		}
		if !errors.Is(err, driver.ErrBadURL) || !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("open(%q) = %v; want an error wrapping driver.ErrBadURL, matching dlm.ErrInvalid", u.URL, err)
		}
	}
}

// TestDriverURLErrors runs [TestURLErrors] on the redis+NAME:// and
// rediss+NAME:// URLs of d, the driver registered as name, through each
// way a program gives a driver a URL: d's own Open, [dlm.OpenNode] and
// [dlm.Open]. It needs no server: every URL is refused before a dial.
func TestDriverURLErrors(t *testing.T, name string, d driver.Driver) {
	t.Helper()
	for _, open := range []struct {
		name string
		fn   func(rawURL string) error
	}{
		{"Driver.Open", func(rawURL string) error { return closeNode(d.Open(rawURL)) }},
		{"dlm.OpenNode", func(rawURL string) error { return closeNode(dlm.OpenNode(rawURL)) }},
		{"dlm.Open", func(rawURL string) error {
			m, err := dlm.Open([]string{rawURL})
			if err == nil {
				m.Close()
			}
			return err
		}},
	} {
		t.Run(open.name, func(t *testing.T) { TestURLErrors(t, name, open.fn) })
	}
}

// closeNode closes n, which an Open that should have failed returned.
func closeNode(n driver.Node, err error) error {
	if err == nil {
		n.Close()
	}
	return err
}
