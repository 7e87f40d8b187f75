//go:build unix

package redigo

import (
	"errors"
	"io"
	"net"
	"syscall"
)

var errUnexpectedRead = errors.New("redigo: idle connection has unread data")

// checker tells, without blocking, whether the peer has closed one
// connection or sent it data no request asked for. It is made once per
// connection, so that a check allocates nothing; one check runs at a time,
// as the pool checks a connection only while no one uses it.
type checker struct {
	raw  syscall.RawConn
	peek func(fd uintptr) bool // reads one byte into err
	err  error
}

// newChecker returns the checker of nc, nil for a connection without a
// socket to look at.
func newChecker(nc net.Conn) *checker {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	ch := &checker{raw: raw}
	ch.peek = func(fd uintptr) bool {
		var b [1]byte
		n, err := syscall.Read(int(fd), b[:])
		switch {
		case n == 0 && err == nil:
			ch.err = io.EOF
		case n > 0:
			ch.err = errUnexpectedRead
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			ch.err = nil
		default:
			ch.err = err
		}
		return true // never wait for the descriptor to be readable
	}
	return ch
}

// check reports whether the connection is fit for a request.
func (ch *checker) check() error {
	if ch == nil {
		return nil
	}
	ch.err = nil
	if err := ch.raw.Read(ch.peek); err != nil {
		return err
	}
	return ch.err
}
