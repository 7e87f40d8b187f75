package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// The bad-input tests drive the public API with every bad input it can be
// given, against real redis-server processes. Each call must end within
// callBound with an error that errors.Is matches against a dlm sentinel,
// without panicking, and leave no key on any node.

// callBound is how long any one call may take. The node timeouts in play
// are at most 250 ms; the rest is margin for a loaded machine.
const callBound = 5 * time.Second

// Passwords that must never appear in an error.
const (
	serverPassword = "right-pw-4242"
	wrongPassword  = "wrong-pw-4242"
	urlPassword    = "hunter2-4242"
)

// respNode returns a raw RESP node for addr, with password when not empty,
// closed when the test ends.
func respNode(t *testing.T, addr, password string) driver.Node {
	t.Helper()
	// Each request's node timeout, taken from the pace measured on the
	// run, bounds its own dial; dial_timeout only keeps a connection made
	// outside a request (a subscription) from hanging.
	cfg, err := driver.ParseURL("redis://" + addr + "?dial_timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = password
	n := resp.NewNode(cfg)
	t.Cleanup(func() { n.Close() })
	return n
}

// startNodes starts n redis-servers and returns them with a node for each.
func startNodes(t *testing.T, n int) ([]*redistest.Server, []driver.Node) {
	t.Helper()
	srvs := redistest.StartServers(t, n)
	nodes := make([]driver.Node, n)
	for i, s := range srvs {
		nodes[i] = respNode(t, s.Addr(), "")
	}
	return srvs, nodes
}

// call runs f and returns its error, failing t if f panics or does not
// return within callBound.
func call(t *testing.T, what string, f func() error) error {
	t.Helper()
	type result struct {
		err      error
		panicked any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{panicked: r}
			}
		}()
		done <- result{err: f()}
	}()
	timer := time.NewTimer(callBound)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.panicked != nil {
			t.Fatalf("%s panicked: %v", what, r.panicked)
		}
		return r.err
	case <-timer.C:
		t.Fatalf("%s did not return within %v", what, callBound)
		return nil
	}
}

// keysLeft returns the keys on srvs, "node i: key" each, sorted.
func keysLeft(t *testing.T, srvs []*redistest.Server) []string {
	t.Helper()
	var left []string
	for i, s := range srvs {
		v, err := s.Do("KEYS", "*")
		if err != nil {
			t.Fatalf("KEYS * on node %d: %v", i, err)
		}
		for _, k := range v.([]any) {
			left = append(left, fmt.Sprintf("node %d: %q", i, k))
		}
	}
	sort.Strings(left)
	return left
}

// releaseBound is how long, at the pace measured through s, a failed
// attempt may take to release the nodes that answered after it returned:
// two node timeouts (of at most 250 ms on a quiet machine, stretched to the
// pace, see pacedNodeTimeout), and margin.
func releaseBound(t *testing.T, s *redistest.Server) time.Duration {
	t.Helper()
	return max(2*time.Second, 3*redistest.MeasurePace(t, s).Slack())
}

// checkNoKeys fails t if a key is left on srvs once the releases still under
// way have had their time, and removes it so that the next row starts
// clean.
func checkNoKeys(t *testing.T, what string, srvs []*redistest.Server) {
	t.Helper()
	left := keysLeft(t, srvs)
	if len(left) == 0 {
		return
	}
	for deadline := time.Now().Add(releaseBound(t, srvs[0])); len(left) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // polling for a background release, not a timing assertion
		left = keysLeft(t, srvs)
	}
	if len(left) == 0 {
		return
	}
	t.Errorf("%s left keys behind: %v", what, left)
	for _, s := range srvs {
		if _, err := s.Do("FLUSHALL"); err != nil {
			t.Fatal(err)
		}
	}
}

// checkErr fails t unless err wraps want and says say.
func checkErr(t *testing.T, what string, err, want error, say string) {
	t.Helper()
	if !errors.Is(err, want) || !strings.Contains(fmt.Sprint(err), say) {
		t.Errorf("%s = %v; want an error wrapping %q that says %q", what, err, want, say)
	}
}

// managerErr closes the manager a call that should have failed returned.
func managerErr(m *dlm.Manager, err error) error {
	if m != nil {
		m.Close()
	}
	return err
}

// lockErr unlocks the lock a call that should have failed returned.
func lockErr(l *dlm.Lock, err error) error {
	if l != nil {
		l.Unlock(context.Background())
	}
	return err
}

// TestBadInputRefused checks the inputs refused before any round trip: bad
// keys, options, contexts, node lists and URLs.
func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	m, err := dlm.New(nodes, dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], derivedNodeTimeout)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if d := dlm.Drivers(); len(d) != 0 {
		t.Fatalf("this test binary registers drivers %v; the URL rows expect none", d)
	}

	ctx := context.Background()
	var nilCtx context.Context // a variable: vet flags a literal nil Context
	tryLock := func(key string, opts ...dlm.Option) func() error {
		return func() error { return lockErr(m.TryLock(ctx, key, opts...)) }
	}
	lock := func(key string, opts ...dlm.Option) func() error {
		return func() error { return lockErr(m.Lock(ctx, key, opts...)) }
	}
	newManager := func(nodes []driver.Node, opts ...dlm.ManagerOption) func() error {
		return func() error { return managerErr(dlm.New(nodes, opts...)) }
	}
	open := func(urls ...string) func() error {
		return func() error { return managerErr(dlm.Open(urls, dlm.WithNodeTimeout(100*time.Millisecond))) }
	}
	addr := srvs[0].Addr()
	port := fmt.Sprint(srvs[0].Port())
	longKey := strings.Repeat("k", dlm.MaxKeyLen+1)

	for _, tc := range []struct {
		name string
		op   func() error
		want error
		say  string
	}{
		// Keys.
		{"TryLock empty key", tryLock(""), dlm.ErrInvalid, "empty key"},
		{"Lock empty key", lock(""), dlm.ErrInvalid, "empty key"},
		{"TryLock key of MaxKeyLen+1 bytes", tryLock(longKey), dlm.ErrInvalid, "at most 1024"},
		{"Lock key of MaxKeyLen+1 bytes", lock(longKey), dlm.ErrInvalid, "at most 1024"},

		// TTLs.
		{"TTL 0", tryLock("k", dlm.WithTTL(0)), dlm.ErrInvalid, "want at least 1ms"},
		{"TTL -1s", tryLock("k", dlm.WithTTL(-time.Second)), dlm.ErrInvalid, "want at least 1ms"},
		{"TTL 1ns", tryLock("k", dlm.WithTTL(time.Nanosecond)), dlm.ErrInvalid, "want at least 1ms"},
		{"TTL 1ms", lock("k", dlm.WithTTL(time.Millisecond)), dlm.ErrInvalid, "leaves no validity"},
		{"TTL 2ms", tryLock("k", dlm.WithTTL(2*time.Millisecond)), dlm.ErrInvalid, "leaves no validity"},
		{"TTL min int64", tryLock("k", dlm.WithTTL(math.MinInt64)), dlm.ErrInvalid, "want at least 1ms"},
		{"New with TTL 0", newManager(nodes, dlm.WithTTL(0)), dlm.ErrInvalid, "want at least 1ms"},

		// Drift factors, node timeouts, retries, options.
		{"drift factor -0.1", tryLock("k", dlm.WithDriftFactor(-0.1)), dlm.ErrInvalid, "drift factor"},
		{"drift factor 0.5", tryLock("k", dlm.WithDriftFactor(0.5)), dlm.ErrInvalid, "drift factor"},
		{"drift factor NaN", lock("k", dlm.WithDriftFactor(math.NaN())), dlm.ErrInvalid, "drift factor"},
		{"drift factor +Inf", tryLock("k", dlm.WithDriftFactor(math.Inf(1))), dlm.ErrInvalid, "drift factor"},
		{"New with drift factor 2", newManager(nodes, dlm.WithDriftFactor(2)), dlm.ErrInvalid, "drift factor"},
		{"node timeout -1ns", tryLock("k", dlm.WithNodeTimeout(-1)), dlm.ErrInvalid, "node timeout"},
		{"New with node timeout -1s", newManager(nodes, dlm.WithNodeTimeout(-time.Second)), dlm.ErrInvalid, "node timeout"},
		{"retry tries -1", lock("k", dlm.WithRetry(-1, nil)), dlm.ErrInvalid, "retry tries"},
		{"New with retry tries -5", newManager(nodes, dlm.WithRetry(-5, dlm.FixedBackoff(time.Millisecond))), dlm.ErrInvalid, "retry tries"},
		{"nil Option", tryLock("k", nil), dlm.ErrInvalid, "nil Option"},

		// Contexts.
		{"TryLock nil Context", func() error { return lockErr(m.TryLock(nilCtx, "k")) }, dlm.ErrInvalid, "nil Context"},
		{"Lock nil Context", func() error { return lockErr(m.Lock(nilCtx, "k")) }, dlm.ErrInvalid, "nil Context"},

		// Node lists.
		{"New nil nodes", newManager(nil), dlm.ErrInvalid, "no nodes"},
		{"New no nodes", newManager([]driver.Node{}), dlm.ErrInvalid, "no nodes"},
		{"New nil node", newManager([]driver.Node{nodes[0], nil, nodes[2]}), dlm.ErrInvalid, "node 1 is nil"},
		{"New same node twice", newManager([]driver.Node{nodes[0], nodes[1], nodes[0]}), dlm.ErrInvalid, "duplicates"},
		{"New two nodes, one address", newManager([]driver.Node{nodes[0], respNode(t, addr, "")}), dlm.ErrInvalid, "duplicates"},
		{"Open nil URLs", open(), dlm.ErrInvalid, "no node URLs"},
		{"Open same URL twice", open("redis://"+addr, "redis://"+srvs[1].Addr(), "redis://"+addr), dlm.ErrInvalid, "duplicates"},
		{"Open one address, two spellings", open("redis://127.0.0.1:"+port, "redis+x://:"+urlPassword+"@127.0.0.1:0"+port), dlm.ErrInvalid, "duplicates"},
		{"Open localhost twice", open("redis://localhost", "redis://localhost:6379"), dlm.ErrInvalid, "duplicates"},

		// Malformed URLs: they wrap driver.ErrBadURL.
		{"Open empty URL", open(""), driver.ErrBadURL, `scheme ""`},
		{"Open no scheme", open(addr), driver.ErrBadURL, "an address, not a URL: write redis://" + addr},
		{"Open host as scheme", open("localhost:6379"), driver.ErrBadURL, "an address, not a URL: write redis://localhost:6379"},
		{"Open http URL", open("http://" + addr), driver.ErrBadURL, `scheme "http"`},
		{"Open '+' and no driver", open("redis+://" + addr), driver.ErrBadURL, "names no driver"},
		{"Open port 0", open("redis://:" + urlPassword + "@127.0.0.1:0"), driver.ErrBadURL, "port: want a number"},
		{"Open bad port", open("redis://:" + urlPassword + "@127.0.0.1:x"), driver.ErrBadURL, "invalid port"},
		{"Open user information without //", open("redis::" + urlPassword + "@" + addr), driver.ErrBadURL, "user information"},
		{"Open bad database", open("redis://:" + urlPassword + "@" + addr + "/x"), driver.ErrBadURL, "the database in the path"},
		{"Open unknown parameter", open("redis://" + addr + "?timeout=1s"), driver.ErrBadURL, `unknown parameter "timeout"`},
		{"Open tls parameter without TLS", open("redis://" + addr + "?tls_insecure_skip_verify=true"), driver.ErrBadURL, "needs a rediss:// URL"},
		{"Open second URL malformed", open("redis+x://"+addr, "redis://h:99999"), driver.ErrBadURL, "node 1"},

		// Drivers.
		{"Open unknown driver", open("redis+nosuch://:" + urlPassword + "@" + addr), dlm.ErrUnknownDriver, `"nosuch" (forgotten import?)`},
		{"Open unknown TLS driver", open("rediss+nosuch://" + addr), dlm.ErrUnknownDriver, "(forgotten import?)"},
		{"Open no driver registered", open("redis://" + addr), dlm.ErrUnknownDriver, "no driver is registered"},
	} {
		err := call(t, tc.name, tc.op)
		checkErr(t, tc.name, err, tc.want, tc.say)
		if strings.Contains(fmt.Sprint(err), urlPassword) {
			t.Errorf("%s = %v; it shows the password", tc.name, err)
		}
		checkNoKeys(t, tc.name, srvs)
	}
}

// TestBadInputOddKeys checks keys that look wrong but are valid: spaces,
// control characters, NUL, glob characters and hash-tag braces. Each locks,
// conflicts with itself and with no other, and unlocks leaving no key.
func TestBadInputOddKeys(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	m, err := dlm.New(nodes, dlm.WithTTL(30*time.Second), dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], derivedNodeTimeout)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	keys := []string{
		"{", "}", "{}", "}{", "a}b", "{x}y", "x", "{x}", "{{x}}",
		"a b", " ", "a\nb", "\r\n", "a\x00b", "\x00", "*", "?", "[a-z]", "\\",
		"ü", "\xff\xfe", strings.Repeat("k", dlm.MaxKeyLen),
	}
	locks := make([]*dlm.Lock, len(keys))
	for i, k := range keys {
		l, err := m.TryLock(ctx, k)
		if err != nil {
			t.Fatalf("TryLock(%q) with %d other odd keys held = %v; want the lock", k, i, err)
		}
		locks[i] = l
	}
	want := make([]string, 0, len(keys)*len(srvs))
	for i := range srvs {
		for _, k := range keys {
			want = append(want, fmt.Sprintf("node %d: %q", i, "redlock:{"+k+"}"))
		}
	}
	sort.Strings(want)
	// TryLock returns on a quorum; the third node's request lands soon after.
	got := keysLeft(t, srvs)
	for deadline := time.Now().Add(releaseBound(t, srvs[0])); strings.Join(got, "\n") != strings.Join(want, "\n") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		got = keysLeft(t, srvs)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("keys on the nodes while held:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, k := range keys {
		err := call(t, fmt.Sprintf("TryLock(%q) again", k), func() error { return lockErr(m.TryLock(ctx, k)) })
		checkErr(t, fmt.Sprintf("TryLock(%q) while held", k), err, dlm.ErrNotObtained, "not obtained")
	}
	for i, l := range locks {
		if err := call(t, "Unlock", func() error { return l.Unlock(ctx) }); err != nil {
			t.Errorf("Unlock(%q) = %v", keys[i], err)
		}
	}
	checkNoKeys(t, "Unlock of every odd key", srvs)
}

// TestBadInputLockUse checks the misuse of a held lock: nil or done
// contexts, bad TTLs, Unlock twice, Extend after Unlock.
func TestBadInputLockUse(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	m, err := dlm.New(nodes, dlm.WithTTL(5*time.Second), dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], derivedNodeTimeout)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var nilCtx context.Context
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel2()
	unlocked := func(l *dlm.Lock) { // runs in call's goroutine: no t.Fatal
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock = %v", err)
		}
	}

	for _, tc := range []struct {
		name string
		op   func(l *dlm.Lock) error
		want error // nil: success
		say  string
		held bool // the lock is still held afterwards
	}{
		{"Unlock twice", func(l *dlm.Lock) error { unlocked(l); return l.Unlock(ctx) }, dlm.ErrNotHeld, "already unlocked", false},
		{"Extend after Unlock", func(l *dlm.Lock) error { unlocked(l); return l.Extend(ctx, time.Second) }, dlm.ErrNotHeld, "already unlocked", false},
		{"Extend twice after Unlock", func(l *dlm.Lock) error {
			unlocked(l)
			l.Extend(ctx, time.Second)
			return l.Extend(ctx, time.Second)
		}, dlm.ErrNotHeld, "already unlocked", false},
		{"Unlock nil Context", func(l *dlm.Lock) error { return l.Unlock(nilCtx) }, dlm.ErrInvalid, "nil Context", true},
		{"Extend nil Context", func(l *dlm.Lock) error { return l.Extend(nilCtx, time.Second) }, dlm.ErrInvalid, "nil Context", true},
		{"Extend TTL 0", func(l *dlm.Lock) error { return l.Extend(ctx, 0) }, dlm.ErrInvalid, "want at least 1ms", true},
		{"Extend TTL -1s", func(l *dlm.Lock) error { return l.Extend(ctx, -time.Second) }, dlm.ErrInvalid, "want at least 1ms", true},
		{"Extend TTL 2ms", func(l *dlm.Lock) error { return l.Extend(ctx, 2*time.Millisecond) }, dlm.ErrInvalid, "leaves no validity", true},
		{"Extend cancelled Context", func(l *dlm.Lock) error { return l.Extend(cancelled, time.Second) }, context.Canceled, "", true},
		{"Extend expired Context", func(l *dlm.Lock) error { return l.Extend(expired, time.Second) }, context.DeadlineExceeded, "", true},
		// Unlock releases even when the caller's context is done.
		{"Unlock cancelled Context", func(l *dlm.Lock) error { return l.Unlock(cancelled) }, nil, "", false},
	} {
		l, err := m.TryLock(ctx, "k")
		if err != nil {
			t.Fatalf("%s: TryLock = %v", tc.name, err)
		}
		err = call(t, tc.name, func() error { return tc.op(l) })
		if tc.want == nil && err != nil {
			t.Errorf("%s = %v; want nil", tc.name, err)
		}
		if tc.want != nil {
			checkErr(t, tc.name, err, tc.want, tc.say)
		}
		if tc.held {
			if until := time.Until(l.Until()); until <= 0 {
				t.Errorf("%s: the lock's validity ended (%v left); want it held still", tc.name, until)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("%s: Unlock afterwards = %v", tc.name, err)
			}
		}
		checkNoKeys(t, tc.name, srvs)
	}

	// Acquiring with a context already done fails with the context's error
	// and leaves nothing behind.
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"expired", expired, context.DeadlineExceeded},
	} {
		for _, op := range []struct {
			name string
			f    func() error
		}{
			{"TryLock", func() error { return lockErr(m.TryLock(tc.ctx, "k")) }},
			{"Lock", func() error { return lockErr(m.Lock(tc.ctx, "k")) }},
		} {
			what := fmt.Sprintf("%s with a %s Context", op.name, tc.name)
			checkErr(t, what, call(t, what, op.f), tc.want, "")
			checkNoKeys(t, what, srvs)
		}
	}
}

// TestBadInputClosedManager checks every operation after Manager.Close.
func TestBadInputClosedManager(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	const ttl = 5 * time.Second
	m, err := dlm.New(nodes, dlm.WithTTL(ttl), dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], derivedNodeTimeout)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := m.TryLock(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	// TryLock returns at a quorum: the grant's request to the slowest node
	// may still be under way. Each node takes the key within its node
	// timeout; releaseBound covers it.
	bound := releaseBound(t, srvs[0])
	deadline := time.Now().Add(bound)
	for i, s := range srvs {
		for {
			v, err := s.Do("EXISTS", "redlock:{held}")
			if err == nil && v == int64(1) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: EXISTS redlock:{held} = %v, %v %v after TryLock; want 1", i, v, err, bound)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	for _, tc := range []struct {
		name string
		op   func() error
		want error // nil: success
	}{
		{"TryLock", func() error { return lockErr(m.TryLock(ctx, "k")) }, dlm.ErrClosed},
		{"Lock", func() error { return lockErr(m.Lock(ctx, "k")) }, dlm.ErrClosed},
		{"TryLock with bad options", func() error { return lockErr(m.TryLock(ctx, "k", dlm.WithTTL(-1))) }, dlm.ErrClosed},
		{"Extend", func() error { return l.Extend(ctx, ttl) }, dlm.ErrClosed},
		{"Unlock", func() error { return l.Unlock(ctx) }, dlm.ErrClosed},
		{"Close again", m.Close, nil},
	} {
		err := call(t, tc.name+" after Close", tc.op)
		if tc.want == nil && err != nil || !errors.Is(err, tc.want) {
			t.Errorf("%s after Close = %v; want %v", tc.name, err, tc.want)
		}
	}
	// Close leaves the lock held to expire by its TTL, as documented, and
	// the calls after it left nothing else.
	left := keysLeft(t, srvs)
	if len(left) != len(srvs) {
		t.Errorf("keys after Close: %v; want only the lock held before it", left)
	}
	for i, s := range srvs {
		pttl, err := s.Do("PTTL", "redlock:{held}")
		if ms, ok := pttl.(int64); err != nil || !ok || ms <= 0 || ms > ttl.Milliseconds() {
			t.Errorf("PTTL of the lock held before Close on node %d = %v, %v; want from 1 to %d", i, pttl, err, ttl.Milliseconds())
		}
	}
}

// TestBadInputNotRedis checks nodes that cannot serve: not Redis at all
// (an HTTP server, a closed port, a server that never answers) or Redis
// with a password the node does not have. With two such nodes of three, a
// lock attempt must fail with ErrUnavailable, never ErrNotObtained, within
// the bound, without showing a password and without leaving the key on the
// healthy node.
func TestBadInputNotRedis(t *testing.T) {
	t.Parallel()
	httpNode := func(t *testing.T) driver.Node {
		s := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(s.Close)
		return respNode(t, s.Listener.Addr().String(), "")
	}
	closedPort := func(t *testing.T) driver.Node {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return respNode(t, addr, "")
	}
	silent := func(t *testing.T) driver.Node {
		return respNode(t, blackHole(t), "")
	}
	authServers := func(t *testing.T, password string) (func(*testing.T) driver.Node, []*redistest.Server) {
		srvs := redistest.StartServers(t, 2, redistest.WithArgs("--requirepass", serverPassword))
		i := 0
		return func(t *testing.T) driver.Node {
			i++
			return respNode(t, srvs[i-1].Addr(), password)
		}, srvs
	}

	for _, tc := range []struct {
		name string
		bad  func(t *testing.T) (func(*testing.T) driver.Node, []*redistest.Server)
		say  string // in the error
	}{
		{"HTTP server", func(*testing.T) (func(*testing.T) driver.Node, []*redistest.Server) { return httpNode, nil }, "protocol error"},
		{"closed port", func(*testing.T) (func(*testing.T) driver.Node, []*redistest.Server) { return closedPort, nil }, "connection refused"},
		{"never answers", func(*testing.T) (func(*testing.T) driver.Node, []*redistest.Server) { return silent, nil }, "deadline exceeded"},
		{"wrong password", func(t *testing.T) (func(*testing.T) driver.Node, []*redistest.Server) {
			return authServers(t, wrongPassword)
		}, "WRONGPASS"},
		{"no password", func(t *testing.T) (func(*testing.T) driver.Node, []*redistest.Server) { return authServers(t, "") }, "NOAUTH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := redistest.StartServer(t)
			newBad, badSrvs := tc.bad(t)
			nodes := []driver.Node{respNode(t, good.Addr(), ""), newBad(t), newBad(t)}
			// Node timeout 100ms, derived from the TTL on a quiet machine,
			// stretched to the pace measured through the good node.
			m, err := dlm.New(nodes, dlm.WithTTL(2*time.Second), dlm.WithNodeTimeout(pacedNodeTimeout(t, good, 100*time.Millisecond)))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			all := append([]*redistest.Server{good}, badSrvs...)
			for _, op := range []struct {
				name string
				f    func() error
			}{
				{"TryLock", func() error { return lockErr(m.TryLock(ctx, "k")) }},
				{"Lock with 3 tries", func() error {
					return lockErr(m.Lock(ctx, "k", dlm.WithRetry(3, dlm.FixedBackoff(10*time.Millisecond))))
				}},
			} {
				err := call(t, op.name, op.f)
				checkErr(t, op.name, err, dlm.ErrUnavailable, tc.say)
				var nerr *dlm.NodeError
				if errors.Is(err, dlm.ErrNotObtained) || !errors.As(err, &nerr) {
					t.Errorf("%s = %v; want no ErrNotObtained and a *NodeError", op.name, err)
				}
				for _, pw := range []string{serverPassword, wrongPassword} {
					if strings.Contains(fmt.Sprint(err), pw) {
						t.Errorf("%s = %v; it shows a password", op.name, err)
					}
				}
				checkNoKeys(t, op.name, all)
			}
		})
	}
}

// blackHole returns the address of a listener that accepts connections and
// never answers, closed with everything it accepted when the test ends.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- c:
			default:
				c.Close()
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(accepted)
		for c := range accepted {
			c.Close()
		}
	})
	return ln.Addr().String()
}
