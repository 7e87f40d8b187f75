package dlmtest_test

import (
	"slices"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/resp"
)

// respDriver opens raw RESP nodes from URLs, so that the security suite runs
// on the core's own adapter, whose nodes connect on use and implement
// driver.Subscriber.
type respDriver struct{}

func (respDriver) Open(url string) (driver.Node, error) {
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return resp.NewNode(cfg), nil
}

func init() { dlm.Register("resp", respDriver{}) }

func TestSecurityOnResp(t *testing.T) {
	t.Parallel()
	dlmtest.TestSecurity(t, "resp")
}

func TestLeastPrivilegeRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prefix, keys, channels string }{
		{"redlock:", "~redlock:*", "&redlock:*"},
		{"a*b?[c]\\:", `~a\*b\?\[c\]\\:*`, `&a\*b\?\[c\]\\:*`},
	} {
		rules := dlmtest.LeastPrivilegeRules(tc.prefix)
		if !slices.Contains(rules, tc.keys) || !slices.Contains(rules, tc.channels) {
			t.Errorf("LeastPrivilegeRules(%q) = %q; want %q and %q", tc.prefix, rules, tc.keys, tc.channels)
		}
	}
}
