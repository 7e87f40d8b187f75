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
