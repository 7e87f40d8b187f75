package dlm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// The driver registry is global. So that these tests do not depend on which
// drivers this test binary happens to register, each one replaces the
// registry with a set of its own for its duration (withDrivers) and puts the
// original back at the end. They may be parallel tests, run beside the
// package's others: registryTests keeps them from running beside each other,
// which swapped one test's registry for another's (TestOpen once found the
// empty registry of TestRegister).

// registryTests is held by a test that replaced the registry, until it ends.
var registryTests sync.Mutex

// withDrivers makes the registry hold exactly ds until the test ends. No
// other test that calls it runs meanwhile.
func withDrivers(t *testing.T, ds map[string]driver.Driver) {
	t.Helper()
	registryTests.Lock()
	t.Cleanup(registryTests.Unlock) // last: after the registry is put back
	driversMu.Lock()
	saved := drivers
	drivers = make(map[string]driver.Driver, len(ds))
	for name, d := range ds {
		drivers[name] = d
	}
	driversMu.Unlock()
	t.Cleanup(func() {
		driversMu.Lock()
		drivers = saved
		driversMu.Unlock()
	})
}

// fakeDriver opens fake nodes named by the URL's address, and remembers them.
type fakeDriver struct {
	name string
	mu   sync.Mutex
	open []*fakeNode
	fail bool // Open fails with an error quoting the URL
}

func (d *fakeDriver) Open(url string) (driver.Node, error) {
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	if d.fail {
		return nil, fmt.Errorf("cannot connect to %s with password %s", cfg.Addr, cfg.Password)
	}
	f := newFakeNode(0)
	f.addr = cfg.Addr
	d.mu.Lock()
	defer d.mu.Unlock()
	d.open = append(d.open, f)
	return f, nil
}

func (d *fakeDriver) opened() []*fakeNode {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.open)
}

// panicMessage runs f and returns what it panicked with, or "" if it did not.
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

func TestRegister(t *testing.T) {
	t.Parallel()
	withDrivers(t, nil)
	for _, tc := range []struct {
		name string
		d    driver.Driver
		want string // panic message prefix; "" for no panic
	}{
		{"zeta", &fakeDriver{}, ""},
		{"alpha", &fakeDriver{}, ""},
		{"mid", &fakeDriver{}, ""},
		{"nil", nil, "dlm: Register driver is nil"},
		{"alpha", &fakeDriver{}, "dlm: Register called twice for driver alpha"},
		{"", &fakeDriver{}, "dlm: "},
		{"a+b", &fakeDriver{}, "dlm: "},
	} {
		got := panicMessage(func() { Register(tc.name, tc.d) })
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("Register(%q, %v) panicked with %q; want %q", tc.name, tc.d, got, tc.want)
		}
	}
	if got, want := Drivers(), []string{"alpha", "mid", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("Drivers() = %q; want %q", got, want)
	}
}

func TestOpenNode(t *testing.T) {
	t.Parallel()
	one := &fakeDriver{name: "one"}
	two := &fakeDriver{name: "two"}
	for _, tc := range []struct {
		name    string
		drivers map[string]driver.Driver
		url     string
		want    *fakeDriver // that opened the node
		wantErr []string    // substrings of the error, with ErrUnknownDriver
	}{
		{"named", map[string]driver.Driver{"one": one, "two": two}, "redis+two://h:1", two, nil},
		{"named tls", map[string]driver.Driver{"one": one, "two": two}, "rediss+one://h:2", one, nil},
		{"unknown", map[string]driver.Driver{"one": one}, "redis+nosuch://h:1", nil,
			[]string{`"nosuch"`, "(forgotten import?)", "registered: one"}},
		{"unknown, none registered", nil, "redis+nosuch://h:1", nil, []string{"(forgotten import?)", "none"}},
		{"plain, none registered", nil, "redis://h:1", nil, []string{"no driver is registered", "forgotten import"}},
		{"plain, one registered", map[string]driver.Driver{"one": one}, "redis://h:3", one, nil},
		{"plain tls, one registered", map[string]driver.Driver{"two": two}, "rediss://h:4", two, nil},
		{"plain, several registered", map[string]driver.Driver{"two": two, "one": one}, "redis://h:1", nil,
			[]string{"several drivers", "one, two", "redis+one://"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withDrivers(t, tc.drivers)
			n, err := OpenNode(tc.url)
			if tc.want == nil {
				if n != nil || !errors.Is(err, ErrUnknownDriver) {
					t.Fatalf("OpenNode(%q) = %v, %v; want ErrUnknownDriver", tc.url, n, err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("OpenNode(%q) = %v; want it to mention %q", tc.url, err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenNode(%q) = %v; want a node", tc.url, err)
			}
			opened := tc.want.opened()
			if len(opened) == 0 || opened[len(opened)-1] != n {
				t.Errorf("OpenNode(%q) = %v; not opened by driver %s", tc.url, n, tc.want.name)
			}
		})
	}
}

// TestOpenNodeRedacts checks that a driver's error quoting the password is
// redacted, and that a bad URL is reported without it.
func TestOpenNodeRedacts(t *testing.T) {
	t.Parallel()
	withDrivers(t, map[string]driver.Driver{"bad": &fakeDriver{fail: true}})
	for _, url := range []string{
		"redis+bad://user:s3cr3tpw@h:1",
		"redis+bad://user:s3cr3tpw@h:99999",
		"redis+bad://user:s3cr3tpw@h:1?bogus=1",
	} {
		n, err := OpenNode(url)
		if n != nil || err == nil || strings.Contains(err.Error(), "s3cr3tpw") {
			t.Errorf("OpenNode(%q) = %v, %v; want an error without the password", url, n, err)
		}
	}
}

// TestOpen checks Open: its validation, that the manager works over the
// opened nodes, that Close closes them, and that a failing URL closes the
// nodes opened before it.
func TestOpen(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	good := &fakeDriver{name: "good"}
	withDrivers(t, map[string]driver.Driver{"good": good, "bad": &fakeDriver{fail: true}})

	for _, urls := range [][]string{nil, {}} {
		if m, err := Open(urls); m != nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(%q) = %v, %v; want ErrInvalid", urls, m, err)
		}
	}
	dup := []string{"redis+good://h:1", "redis+good://h:2", "redis+good://h:1/3"}
	if m, err := Open(dup); m != nil || !errors.Is(err, ErrInvalid) || len(good.opened()) != 0 {
		t.Errorf("Open(%q) = %v, %v; want ErrInvalid before opening any node", dup, m, err)
	}
	if m, err := Open([]string{"redis+good://h:1"}, WithTTL(-1)); m != nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(WithTTL(-1)) = %v, %v; want ErrInvalid", m, err)
	}
	for _, n := range good.opened() { // the failed Open closed what it opened
		if n.count("close") != 1 {
			t.Errorf("node %s closed %d times after a failed Open; want 1", n.Addr(), n.count("close"))
		}
	}

	before := len(good.opened())
	m, err := Open([]string{"redis+good://h:1", "redis+good://h:2", "redis+bad://h:3"})
	if m != nil || err == nil || !strings.Contains(err.Error(), "node 2") {
		t.Fatalf("Open(with a failing URL) = %v, %v; want an error naming node 2", m, err)
	}
	for _, n := range good.opened()[before:] {
		if n.count("close") != 1 {
			t.Errorf("node %s closed %d times after a failed Open; want 1", n.Addr(), n.count("close"))
		}
	}

	before = len(good.opened())
	m, err = Open([]string{"redis+good://h:1", "redis+good://h:2", "redis+good://h:3"})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	opened := good.opened()[before:]
	if got := fmt.Sprint(m.Nodes()); got != "[h:1 h:2 h:3]" {
		t.Errorf("Nodes() = %s; want [h:1 h:2 h:3]", got)
	}
	l, err := m.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatalf("TryLock = %v", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	for _, n := range opened {
		if n.count("close") != 1 {
			t.Errorf("node %s closed %d times by Close of an opened Manager; want 1", n.Addr(), n.count("close"))
		}
	}
}
