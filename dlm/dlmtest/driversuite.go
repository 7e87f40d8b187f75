package dlmtest

import (
	"context"
	"errors"
	"github.com/dlmgo/redlock/dlm/redistest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// driverEvalTimeout bounds the driver suite's calls that are meant to end on
// their own.
const driverEvalTimeout = 5 * time.Second

// echoScript returns its first argument.
const echoScript = "return ARGV[1]"

// TestDriver runs the driver suite through the driver registered as name,
// with nodes opened by [dlm.OpenNode] from redis+NAME:// and rediss+NAME://
// URLs, each subtest on redis-server processes of its own. It checks that:
//
//   - the right password opens a node; a wrong or missing one fails Open
//     with WRONGPASS or NOAUTH, never showing the password, and so does a
//     password for the default user of a server that has none
//     ([driver.CheckOpen]); an ACL user runs what its rules allow and gets
//     NOPERM for the rest;
//   - the database of the URL's path or its db parameter is the one the
//     scripts see, and one the server lacks fails Open;
//   - a node opens while its server is down, fails calls meanwhile and works
//     once the server is back; connections pooled before a restart, plain or
//     TLS, do not fail the calls after it; a server busy with a script does
//     not fail Open, as a wrong password does; a server answering each
//     error reply of [driver.Transient]'s cases (LOADING, CLUSTERDOWN,
//     NOPERM, ...) fails Open exactly when that function says it refuses
//     the node's settings;
//   - replies are normalized as package [driver] documents, an error reply
//     nested in an array is an error element, and a script flushed from the
//     server's cache is sent again with EVAL;
//   - a call with a context already done, one that reaches its deadline and
//     one cancelled before it return promptly with the context's error, on
//     a server that answers nothing; a connection whose request timed out
//     does not answer the next request with its late reply;
//   - TLS works with the server's CA given by tls_ca_file, and with
//     tls_insecure_skip_verify.
//
// Ping is checked when the node implements [driver.Pinger]. What a driver
// does with an untrusted certificate, fail Open or the calls, is its own
// choice; the suite leaves it to the driver's tests. The suite checks that
// no goroutine outlives the Close of its nodes. Its subtests run in parallel,
// each on a server of its own.
//
// A driver's test is one line:
//
//	func TestDriver(t *testing.T) { dlmtest.TestDriver(t, "mydriver") }
func TestDriver(t *testing.T, name string) {
	d := driverSuite{plain: "redis+" + name + "://", tls: "rediss+" + name + "://"}
	snap := leakcheck.Scoped()
	// Cleanups run once the parallel subtests have ended.
	t.Cleanup(func() { snap.Check(t, 5*time.Second) })
	for _, st := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Password", d.testPassword},
		{"PasswordWithoutServerPassword", d.testPasswordWithoutServerPassword},
		{"ACLUser", d.testACLUser},
		{"Database", d.testDatabase},
		{"ServerDownAtOpen", d.testServerDownAtOpen},
		{"ServerRestart", d.testServerRestart},
		{"OpenWhileBusy", d.testOpenWhileBusy},
		{"OpenErrorReplies", d.testOpenErrorReplies},
		{"Replies", d.testReplies},
		{"NestedErrorReply", d.testNestedErrorReply},
		{"NoScriptFallback", d.testNoScriptFallback},
		{"ContextDone", d.testContextDone},
		{"LateReplyNotReused", d.testLateReplyNotReused},
		{"TLS", d.testTLS},
	} {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			st.fn(t)
		})
	}
}

// driverSuite is the driver suite's URL schemes, with "://".
type driverSuite struct{ plain, tls string }

// open opens the node of rawURL through the registry and closes it when the
// test ends.
func (driverSuite) open(t *testing.T, rawURL string) driver.Node {
	t.Helper()
	n, err := dlm.OpenNode(rawURL)
	if err != nil {
		t.Fatalf("OpenNode(%q): %v", driver.Redact(rawURL), err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

// evalSource runs src on n with a generous deadline.
func evalSource(n driver.Node, src string, keys, args []string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), driverEvalTimeout)
	defer cancel()
	return n.Eval(ctx, driver.NewScript(src), keys, args)
}

func (d driverSuite) testPassword(t *testing.T) {
	s := redistest.StartServer(t, redistest.WithArgs("--requirepass", "s3cret"))
	n := d.open(t, d.plain+":s3cret@"+s.Addr())
	if v, err := evalSource(n, echoScript, nil, []string{"hi"}); v != "hi" || err != nil {
		t.Errorf("Eval with the right password = %v, %v; want hi, nil", v, err)
	}
	for _, tc := range []struct{ url, code string }{
		{d.plain + ":wr0ngpw@" + s.Addr(), "WRONGPASS"},
		{d.plain + "default:wr0ngpw@" + s.Addr(), "WRONGPASS"},
		{d.plain + s.Addr(), "NOAUTH"},
	} {
		n, err := dlm.OpenNode(tc.url)
		if err == nil {
			n.Close()
			t.Errorf("OpenNode(%q) = nil error; want %s", driver.Redact(tc.url), tc.code)
			continue
		}
		if !strings.Contains(err.Error(), tc.code) || strings.Contains(err.Error(), "wr0ngpw") {
			t.Errorf("OpenNode(%q) = %v; want %s, without the password", driver.Redact(tc.url), err, tc.code)
		}
	}
}

func (d driverSuite) testACLUser(t *testing.T) {
	s := redistest.StartServer(t)
	for _, cmd := range [][]string{
		{"ACL", "SETUSER", "alice", "on", ">pw-alice", "~*", "+@all"},
		{"ACL", "SETUSER", "bob", "on", ">pw-bob", "~bob:*", "+@all"},
	} {
		if _, err := s.Do(cmd...); err != nil {
			t.Fatalf("%v: %v", cmd[:3], err)
		}
	}
	set := "return redis.call('SET', KEYS[1], 'x')"
	alice := d.open(t, d.plain+"alice:pw-alice@"+s.Addr())
	if v, err := evalSource(alice, set, []string{"any"}, nil); v != "OK" || err != nil {
		t.Errorf("alice SET = %v, %v; want OK, nil", v, err)
	}
	bob := d.open(t, d.plain+"bob:pw-bob@"+s.Addr())
	if v, err := evalSource(bob, set, []string{"bob:1"}, nil); v != "OK" || err != nil {
		t.Errorf("bob SET bob:1 = %v, %v; want OK, nil", v, err)
	}
	if v, err := evalSource(bob, set, []string{"alice:1"}, nil); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("bob SET alice:1 = %v, %v; want a NOPERM error", v, err)
	}
	n, err := dlm.OpenNode(d.plain + "alice:pw-bob@" + s.Addr())
	if err == nil {
		n.Close()
		t.Fatal("OpenNode as alice with bob's password: nil error; want WRONGPASS")
	}
	if !strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "pw-bob") {
		t.Errorf("OpenNode as alice with bob's password = %v; want WRONGPASS without the password", err)
	}
}

func (d driverSuite) testDatabase(t *testing.T) {
	s := redistest.StartServer(t)
	set := "return redis.call('SET', KEYS[1], ARGV[1])"
	get := "return redis.call('GET', KEYS[1])"
	if _, err := evalSource(d.open(t, d.plain+s.Addr()+"/3"), set, []string{"k"}, []string{"in3"}); err != nil {
		t.Fatalf("SET in db 3: %v", err)
	}
	for _, tc := range []struct {
		url  string
		want any
	}{
		{d.plain + s.Addr(), nil},
		{d.plain + s.Addr() + "/0", nil},
		{d.plain + s.Addr() + "/3", "in3"},
		{d.plain + s.Addr() + "?db=3", "in3"},
	} {
		if v, err := evalSource(d.open(t, tc.url), get, []string{"k"}, nil); v != tc.want || err != nil {
			t.Errorf("GET k through %s = %v, %v; want %v, nil", tc.url, v, err, tc.want)
		}
	}
	// A database the server lacks is a bad URL for that server: Open
	// fails with the server's reply, matching ErrInvalid and
	// driver.ErrBadURL, on every backend.
	for _, u := range []string{d.plain + s.Addr() + "/99", d.plain + s.Addr() + "?db=99"} {
		opens := []struct {
			name string
			open func() error
		}{
			{"OpenNode", func() error {
				n, err := dlm.OpenNode(u)
				if err == nil {
					n.Close()
				}
				return err
			}},
			{"Open", func() error {
				m, err := dlm.Open([]string{u})
				if err == nil {
					m.Close()
				}
				return err
			}},
		}
		for _, o := range opens {
			err := o.open()
			if err == nil || !strings.Contains(err.Error(), "DB index is out of range") ||
				!errors.Is(err, dlm.ErrInvalid) || !errors.Is(err, driver.ErrBadURL) {
				t.Errorf("%s(%q) of a server with 16 databases = %v; want ERR DB index is out of range, matching ErrInvalid and driver.ErrBadURL", o.name, u, err)
			}
		}
	}
}

// testServerDownAtOpen checks that a node opens while its server is down,
// fails calls meanwhile, and works once the server is back.
func (d driverSuite) testServerDownAtOpen(t *testing.T) {
	s := redistest.StartServer(t)
	s.Kill()
	n := d.open(t, d.plain+s.Addr())
	if v, err := evalSource(n, echoScript, nil, []string{"down"}); err == nil {
		t.Errorf("Eval with the server down = %v, nil; want an error", v)
	}
	s.Restart()
	if v, err := evalSource(n, echoScript, nil, []string{"up"}); v != "up" || err != nil {
		t.Errorf("Eval once the server is up = %v, %v; want up, nil", v, err)
	}
}

// testServerRestart checks that connections pooled before a restart do not
// fail the calls after it.
func (d driverSuite) testServerRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []redistest.ServerOption
		scheme string
	}{
		{"plain", nil, d.plain},
		{"TLS", []redistest.ServerOption{redistest.WithTLS()}, d.tls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.StartServer(t, tc.opts...)
			u := tc.scheme + s.Addr()
			if ca := s.CAFile(); ca != "" {
				u += "?tls_ca_file=" + ca
			}
			n := d.open(t, u)
			if v, err := evalSource(n, echoScript, nil, []string{"before"}); v != "before" || err != nil {
				t.Fatalf("Eval = %v, %v; want before, nil", v, err)
			}
			s.Restart()
			for i := 0; i < 3; i++ {
				if v, err := evalSource(n, echoScript, nil, []string{"after"}); v != "after" || err != nil {
					t.Errorf("Eval #%d after the restart = %v, %v; want after, nil", i, v, err)
				}
			}
		})
	}
}

// testOpenWhileBusy checks that a server that answers it is busy does not
// fail Open, as a wrong password does: it is as good as down for now.
func (d driverSuite) testOpenWhileBusy(t *testing.T) {
	s := redistest.StartServer(t, redistest.WithArgs("--lua-time-limit", "50"))
	busy := d.open(t, d.plain+s.Addr())
	done := make(chan error, 1)
	go func() {
		_, err := evalSource(busy, spinScript, nil, []string{"800000"})
		done <- err
	}()
	awaitBusy(t, s)
	n, err := dlm.OpenNode(d.plain + s.Addr())
	if err != nil {
		t.Errorf("OpenNode while a script runs: %v; want the node opened", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the long script: %v", err)
	}
	if n != nil {
		defer n.Close()
		if v, err := evalSource(n, echoScript, nil, []string{"idle"}); v != "idle" || err != nil {
			t.Errorf("Eval once the script is done = %v, %v; want idle, nil", v, err)
		}
	}
}

// awaitBusy returns once s answers BUSY: a script has run past the server's
// lua-time-limit. Until then a PING waits for the script or is answered
// before it started.
func awaitBusy(t *testing.T, s *redistest.Server) {
	t.Helper()
	deadline := time.Now().Add(driverEvalTimeout)
	for {
		_, err := s.Do("PING")
		if err != nil && strings.Contains(err.Error(), "BUSY") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PING = %v; want BUSY while the script runs", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (d driverSuite) testTLS(t *testing.T) {
	s := redistest.StartServer(t, redistest.WithTLS())
	for _, u := range []string{
		d.tls + s.Addr() + "?tls_ca_file=" + s.CAFile(),
		d.tls + s.Addr() + "?tls_ca_file=" + url.QueryEscape(s.CAFile()),
		d.tls + s.Addr() + "?tls_insecure_skip_verify=true",
	} {
		if v, err := evalSource(d.open(t, u), echoScript, nil, []string{"tls"}); v != "tls" || err != nil {
			t.Errorf("Eval through %s = %v, %v; want tls, nil", u, v, err)
		}
	}
}
