package adapterkit

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// replyErr is an error reply of a fake client library.
type replyErr string

func (e replyErr) Error() string { return string(e) }

func TestRefused(t *testing.T) {
	t.Parallel()
	errorReply := ErrorReply[replyErr]
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"wrong password", fmt.Errorf("handshake: %w", replyErr("WRONGPASS invalid username-password pair")), true},
		{"no such database", replyErr("ERR DB index is out of range"), true},
		{"loading", replyErr("LOADING Redis is loading the dataset in memory"), false},
		{"max clients", replyErr("ERR max number of clients reached"), false},
		{"untrusted certificate", fmt.Errorf("dial: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), true},
		{"panic", (Panics{Client: "fake"}).Do(func() { panic("boom") }), true},
		{"connection refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
	} {
		if got := Refused(tc.err, errorReply); got != tc.want {
			t.Errorf("Refused(%s: %v) = %v; want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestPanicsRedactPassword(t *testing.T) {
	t.Parallel()
	p := Panics{Client: "fake", Password: "s3cret"}
	err := p.Close(func() error { panic("auth s3cret failed") })
	var perr *driver.PanicError
	if !errors.As(err, &perr) || perr.Client != "fake" || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Close of a panicking close = %v; want a PanicError of fake without the password", err)
	}
	if v, err := p.Call(func() (any, error) { panic("x") }); v != nil || !IsPanic(err) {
		t.Errorf("Call of a panicking call = %v, %v; want nil, a PanicError", v, err)
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	p := Panics{Client: "fake"}
	for _, tc := range []struct {
		name          string
		receive       func(i int) (any, error)
		deliverPanics bool
		wantPanicked  bool
		wantDelivered int
	}{
		{"receive fails", func(i int) (any, error) {
			if i == 2 {
				return nil, errors.New("closed")
			}
			return i, nil
		}, false, false, 2},
		{"receive panics", func(i int) (any, error) {
			if i == 1 {
				panic("read")
			}
			return i, nil
		}, false, true, 1},
		{"deliver panics", func(i int) (any, error) { return i, nil }, true, false, 1},
	} {
		i, delivered := 0, 0
		receive := func() (any, error) { v, err := tc.receive(i); i++; return v, err }
		deliver := func(any) {
			delivered++
			if tc.deliverPanics {
				panic("handler")
			}
		}
		if got := p.Read(receive, deliver); got != tc.wantPanicked || delivered != tc.wantDelivered {
			t.Errorf("%s: Read = %v after %d deliveries; want %v after %d", tc.name, got, delivered, tc.wantPanicked, tc.wantDelivered)
		}
	}
}

// fakeConn is a connection of a sharded subscription; its reader returns
// when stop is closed.
type fakeConn struct {
	stop                chan struct{}
	closed, closePanics bool
}

func TestShards(t *testing.T) {
	t.Parallel()
	errEnded := errors.New("fake: subscription ended")
	s := NewShards(Panics{Client: "fake"}, func(c *fakeConn) error {
		c.closed = true
		if c.closePanics {
			panic("close")
		}
		return nil
	}, errEnded)
	open := func() (*fakeConn, error) { return &fakeConn{stop: make(chan struct{})}, nil }
	read := func(c *fakeConn) { <-c.stop }
	a, err := s.Conn("a:1", open, read)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Conn("a:1", open, read); again != a {
		t.Error("Conn of the same address opened a second connection")
	}
	b, _ := s.Conn("b:1", open, read)
	forgotten, _ := s.Conn("c:1", open, read)
	s.Forget(forgotten)
	close(a.stop) // a's reader ends: the whole subscription ends
	<-s.Done()
	close(b.stop)
	close(forgotten.stop)
	if err := s.Close(); err != nil {
		t.Errorf("Close = %v; want nil", err)
	}
	if !a.closed || !b.closed || forgotten.closed {
		t.Errorf("closed a, b, forgotten = %v, %v, %v; want true, true, false", a.closed, b.closed, forgotten.closed)
	}
	if _, err := s.Conn("d:1", open, read); err != errEnded {
		t.Errorf("Conn after the end = %v; want %v", err, errEnded)
	}

	s = NewShards(Panics{Client: "fake"}, func(c *fakeConn) error { panic("close") }, errEnded)
	c, _ := s.Conn("a:1", open, read)
	if err := s.Close(); !IsPanic(err) {
		t.Errorf("Close with a connection whose close panics = %v; want a PanicError", err)
	}
	close(c.stop)
}
