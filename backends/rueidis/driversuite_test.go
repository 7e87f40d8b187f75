package rueidis_test

import (
	"testing"

	"github.com/dlmgo/redlock/backends/rueidis"
	"github.com/dlmgo/redlock/dlm/dlmtest"
)

// TestDriver runs the driver suite through this driver: passwords, ACL
// users and databases from the URL, a server down, restarted or busy,
// reply normalization, contexts on a paused server, and TLS. No goroutine
// of rueidis or of this package may outlive it.
func TestDriver(t *testing.T) {
	t.Parallel()
	checkNoLeak(t)
	dlmtest.TestDriver(t, rueidis.Name)
}

// TestDriverConns checks that requests that time out do not cost
// connections ([dlmtest.TestDriverConns]).
func TestDriverConns(t *testing.T) {
	t.Parallel()
	dlmtest.TestDriverConns(t, rueidis.Name)
}

// TestDriverSlowDial checks that a dial that outlasts its request is made
// to its end and serves the next requests ([dlmtest.TestDriverSlowDial]).
func TestDriverSlowDial(t *testing.T) {
	t.Parallel()
	dlmtest.TestDriverSlowDial(t, rueidis.Name)
}
