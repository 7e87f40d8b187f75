//go:build unix

package resp

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// idleClosed reports whether the server closed c while it sat in the pool,
// as a restarted server has, or sent something unasked; either way the
// connection is unusable. It peeks at the socket without blocking.
func idleClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	// The last request's deadline has passed; RawConn.Read would refuse.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return true
	}
	closed := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n > 0 || !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK)
		return true
	})
	return err != nil || closed
}
