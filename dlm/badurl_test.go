package dlm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// pickyDriver opens fake nodes, but refuses URLs with a parameter it does
// not support, as a driver's own check of a URL that ParseURL accepts does
// (redis+redigo:// with cluster=true).
type pickyDriver struct{ fakeDriver }

func (d *pickyDriver) Open(url string) (driver.Node, error) {
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	if cfg.Cluster {
		return nil, fmt.Errorf("%w %s: cluster=true is not supported by this driver", driver.ErrBadURL, cfg.Name())
	}
	return d.fakeDriver.Open(url)
}

// TestBadURLIsErrInvalid checks that every bad node URL — one ParseURL
// refuses, a bare address, one a driver's Open refuses — fails Open and
// OpenNode with an error matching both ErrInvalid and driver.ErrBadURL.
// It swaps the driver registry, so it does not run in parallel.
func TestBadURLIsErrInvalid(t *testing.T) {
	withDrivers(t, map[string]driver.Driver{"fake": &fakeDriver{name: "fake"}, "picky": &pickyDriver{}})
	for _, u := range []string{
		"127.0.0.1:6379",                        // a bare address
		"http://h:6379",                         // not a Redis scheme
		"redis+://h:6379",                       // no driver after '+'
		"redis+fake://h:port",                   // a bad port
		"redis+fake://h:70000",                  // a port out of range
		"redis+fake://h:6379/x",                 // a bad database
		"redis+fake://h:6379?dial_timeout=soon", // a bad duration
		"redis+fake://h:6379?cluster=maybe",     // a bad boolean
		"redis+fake://h:6379?cluster=true&sentinel_master=m",
		"redis+fake://h:6379#frag",                             // a fragment
		"redis+fake://u:pa/ss@h:6379",                          // a '/' in the password
		"redis+fake://h1:6379,h2:6379",                         // several servers without cluster=true
		"redis+picky://h:6379?cluster=true",                    // refused by the driver's Open
		"redis+picky://u:secret@h:6379?cluster=1",              // likewise, with a password
		"rediss+picky://h:6379?cluster=true&db=0",              // likewise, over TLS
		"redis+fake://h:6379?tls_cert_file=c.pem",              // a certificate without its key
		"rediss+fake://h:6379?tls_ca_file=/nonexistent/ca.pem", // a CA file that cannot be read
	} {
		opens := []struct {
			name string
			open func() error
		}{
			{"OpenNode", func() error { return closeNode(OpenNode(u)) }},
			{"Open", func() error { return closeManager(Open([]string{u})) }},
			{"Open, second node", func() error { return closeManager(Open([]string{"redis+fake://other:6379", u})) }},
		}
		for _, o := range opens {
			err := o.open()
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, driver.ErrBadURL) {
				t.Errorf("%s(%q) = %v; want an error matching ErrInvalid and driver.ErrBadURL", o.name, u, err)
			}
		}
	}
	// ParseURL's own errors match ErrInvalid, for drivers that return them.
	if _, err := driver.ParseURL("redis://h:port"); !errors.Is(err, ErrInvalid) {
		t.Errorf("driver.ParseURL(bad port) = %v; want an error matching ErrInvalid", err)
	}
}

// closeNode closes n, which an OpenNode that should have failed returned.
func closeNode(n driver.Node, err error) error {
	if err == nil {
		n.Close()
	}
	return err
}

// closeManager closes m, which an Open that should have failed returned.
func closeManager(m *Manager, err error) error {
	if err == nil {
		m.Close()
	}
	return err
}
