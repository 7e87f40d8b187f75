package goredis

import (
	"testing"

	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestDriver runs the driver suite through this driver: passwords, ACL
// users and databases from the URL, a server down, restarted or busy,
// reply normalization, contexts on a paused server, and TLS.
func TestDriver(t *testing.T) {
	t.Parallel()
	dlmtest.TestDriver(t, Name)
}

// TestUntrustedCertificate checks what this driver does with a server whose
// certificate it cannot verify: Open does not fail, as for any server it
// cannot reach; the calls do. (The rueidis driver fails Open instead, so the
// driver suite leaves this case out.)
func TestUntrustedCertificate(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t, redistest.WithTLS())
	n := openNode(t, "rediss+goredis://"+s.Addr())
	if v, err := eval(n, echo, nil, []string{"tls"}); err == nil {
		t.Errorf("Eval with an untrusted certificate = %v, nil; want an error", v)
	}
}

// TestRESP3False checks that a RESP3 false reads as 0, as Redis sends it to
// a RESP2 connection, which this driver uses. (The rueidis driver speaks
// RESP3 and reads it as nil, so the driver suite leaves this case out.)
func TestRESP3False(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	n := openNode(t, "redis+goredis://"+s.Addr())
	src := "redis.setresp(3); return false"
	if v, err := eval(n, src, []string{"{k}1"}, []string{"arg"}); err != nil || v != int64(0) {
		t.Errorf("Eval(%q) = %#v, %v; want %#v, nil", src, v, err, int64(0))
	}
}

// TestDriverConns checks that requests that time out do not cost
// connections ([dlmtest.TestDriverConns]).
func TestDriverConns(t *testing.T) {
	t.Parallel()
	dlmtest.TestDriverConns(t, Name)
}

// TestDriverSlowDial checks that a dial that outlasts its request is made
// to its end and serves the next requests ([dlmtest.TestDriverSlowDial]).
func TestDriverSlowDial(t *testing.T) {
	t.Parallel()
	dlmtest.TestDriverSlowDial(t, Name)
}
