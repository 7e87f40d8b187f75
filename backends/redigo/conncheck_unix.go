//go:build unix

package redigo

import (
	"errors"
	"io"
	"net"
	"syscall"
)

var errUnexpectedRead = errors.New("redigo: idle connection has unread data")

// connCheck reports whether the peer has closed nc, or sent it data no
// request asked for, without blocking.
func connCheck(nc net.Conn) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var readErr error
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, err := syscall.Read(int(fd), b[:])
		switch {
		case n == 0 && err == nil:
			readErr = io.EOF
		case n > 0:
			readErr = errUnexpectedRead
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			readErr = nil
		default:
			readErr = err
		}
		return true // never wait for the descriptor to be readable
	})
	if err != nil {
		return err
	}
	return readErr
}
