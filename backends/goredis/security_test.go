package goredis

import (
	"testing"

	"github.com/dlmgo/redlock/dlm/dlmtest"
)

// TestSecurity runs the security suite through this driver: TLS with ACL
// users, the least-privilege rules, refusals reported as dlm.ErrPermission,
// and no password or token in errors, events or logs.
func TestSecurity(t *testing.T) {
	t.Parallel()
	dlmtest.TestSecurity(t, Name)
}

// TestURLErrorsNeverQuotePassword checks that this driver's Open, and
// dlm.OpenNode and dlm.Open on its URLs, refuse a URL whose password url.Parse
// would split elsewhere than at the user information with errors that show
// no part of it.
func TestURLErrorsNeverQuotePassword(t *testing.T) {
	t.Parallel()
	dlmtest.TestDriverURLErrors(t, Name, Driver{})
}
