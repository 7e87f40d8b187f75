package dlm

import (
	"errors"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// TestPlainURLOneRule checks the one rule for a URL that names no backend
// (redis://, rediss://), which the CLI follows too: it uses the only
// registered driver, and is refused with ErrUnknownDriver, naming them,
// where several are registered, never given one of them; and that a URL
// without a host is a bad URL (ErrBadURL, so ErrInvalid), not localhost,
// whatever drivers are registered and whether the URL names one, before
// any driver is looked up.
func TestPlainURLOneRule(t *testing.T) {
	t.Parallel()
	one, two := &fakeDriver{name: "one"}, &fakeDriver{name: "two"}
	for _, tc := range []struct {
		name    string
		drivers map[string]driver.Driver
		url     string
		want    error  // nil: opened
		says    string // in the error
	}{
		{"no host, several drivers", map[string]driver.Driver{"one": one, "two": two}, "redis://", driver.ErrBadURL, "no host"},
		{"no host, one driver", map[string]driver.Driver{"one": one}, "redis://", driver.ErrBadURL, "no host"},
		{"no host, none", nil, "rediss://", driver.ErrBadURL, "no host"},
		{"no host, named driver", map[string]driver.Driver{"one": one}, "redis+one://:6379", driver.ErrBadURL, "no host"},
		{"no host, unknown driver", map[string]driver.Driver{"one": one}, "redis+nosuch://", driver.ErrBadURL, "no host"},
		{"plain, several drivers", map[string]driver.Driver{"one": one, "two": two}, "redis://h:1", ErrUnknownDriver, "several drivers are registered (one, two); name one in the scheme"},
		{"plain TLS, several drivers", map[string]driver.Driver{"one": one, "two": two}, "rediss://h:1", ErrUnknownDriver, "several drivers"},
		{"plain, one driver", map[string]driver.Driver{"two": two}, "redis://h:1", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withDrivers(t, tc.drivers)
			for _, open := range []struct {
				name string
				fn   func(string) error
			}{
				{"OpenNode", func(u string) error {
					n, err := OpenNode(u)
					if err == nil {
						n.Close()
					}
					return err
				}},
				{"Open", func(u string) error {
					m, err := Open([]string{u})
					if err == nil {
						m.Close()
					}
					return err
				}},
			} {
				err := open.fn(tc.url)
				switch {
				case tc.want == nil && err != nil:
					t.Errorf("%s(%q) = %v; want it opened", open.name, tc.url, err)
				case tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says)):
					t.Errorf("%s(%q) = %v; want %v saying %q", open.name, tc.url, err, tc.want, tc.says)
				case errors.Is(tc.want, driver.ErrBadURL) && (!errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnknownDriver)):
					t.Errorf("%s(%q) = %v; want ErrInvalid, not ErrUnknownDriver", open.name, tc.url, err)
				}
			}
		})
	}
}
