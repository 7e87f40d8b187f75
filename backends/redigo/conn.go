package redigo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/dlm/driver"
)

var (
	_ redis.ConnWithContext = (*conn)(nil)
	_ redis.ConnWithTimeout = (*conn)(nil)
)

// conn is a connection made by a node's own pool, which keeps its network
// connection so that the pool can check it before reuse, and so that a
// request can be cut short by closing it.
type conn struct {
	redis.Conn
	nc net.Conn
	// readTimeout is the connection's own bound on waiting for a reply,
	// which a context's deadline may shorten.
	readTimeout time.Duration
	// check looks at the socket before the pool hands the connection out.
	check *checker
	// broken is set once a request was cut short by closing nc: the pool
	// must not hand the connection out again.
	broken atomic.Bool
	// open is the set of its pool's open connections, which c leaves when
	// closed.
	open *openConns
}

// Close closes the connection and takes it out of its pool's set.
func (c *conn) Close() error {
	c.open.remove(c)
	return c.Conn.Close()
}

// openConns is the set of a pool's open connections: the node's Close
// closes those that requests given up on still hold, waiting for a late
// reply (see node.do), which redigo's Pool.Close leaves open.
type openConns struct {
	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
}

// add adds c, and reports false once closeAll has run.
func (s *openConns) add(c *conn) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[*conn]struct{})
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *openConns) remove(c *conn) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// closeAll closes the sockets of the open connections, whose reads then
// fail at once, and fails later adds.
func (s *openConns) closeAll() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for c := range conns {
		c.nc.Close()
	}
}

// errInterrupted is the error of a connection closed under a request whose
// context ended.
var errInterrupted = errors.New("redigo: connection closed as a request's context ended")

// DoContext sends a command and waits for its reply within ctx, on the
// caller's goroutine (redigo's own DoContext starts one per request):
//
//   - ctx that cannot end, or one of [driver.WithNodeDeadline] (package
//     dlm's requests), which ends only at its deadline while the request
//     runs: the read deadline, ctx's deadline if it comes before the
//     connection's read timeout, is all the request needs.
//   - Any other ctx: as above, and should ctx end first, a
//     [context.AfterFunc] closes the connection under the request, which
//     then returns at once; the connection is not used again.
func (c *conn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	timeout := c.readTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return nil, context.DeadlineExceeded
		}
		if timeout == 0 || left < timeout {
			timeout = left
		}
	}
	if ctx.Done() == nil || driver.DeadlineOnly(ctx) {
		return redis.DoWithTimeout(c.Conn, timeout, cmd, args...)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, c.interrupt)
	v, err := redis.DoWithTimeout(c.Conn, timeout, cmd, args...)
	if !stop() {
		// ctx ended under the request: the connection is closed, or
		// about to be.
		c.broken.Store(true)
		if err == nil || isReply(err) {
			return v, err // the reply came first
		}
		return nil, fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return v, err
}

// interrupt closes the connection under a request whose context ended.
func (c *conn) interrupt() {
	c.broken.Store(true)
	c.nc.Close()
}

// Err reports a connection the pool must drop: broken by a failed request,
// or closed under one whose context ended.
func (c *conn) Err() error {
	if c.broken.Load() {
		return errInterrupted
	}
	return c.Conn.Err()
}

// ReceiveContext, DoWithTimeout and ReceiveWithTimeout pass through: redigo
// looks for them on the connection the pool dialled.

func (c *conn) ReceiveContext(ctx context.Context) (any, error) {
	return redis.ReceiveContext(c.Conn, ctx)
}

func (c *conn) DoWithTimeout(timeout time.Duration, cmd string, args ...any) (any, error) {
	return redis.DoWithTimeout(c.Conn, timeout, cmd, args...)
}

func (c *conn) ReceiveWithTimeout(timeout time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, timeout)
}

// testOnBorrow is the pool's TestOnBorrow. redigo reuses an idle
// connection as it is, so after a server restart every pooled connection
// would fail its next request; this drops those the server has closed, at
// the cost of one non-blocking read and no round trip (go-redis does the
// same).
func testOnBorrow(c redis.Conn, _ time.Time) error {
	cc, ok := c.(*conn)
	if !ok {
		return nil
	}
	return cc.check.check()
}

// socketOf returns the connection under nc's TLS, if any. Unread bytes under
// TLS would be as unexpected as in the clear: an idle connection has been
// sent nothing.
func socketOf(nc net.Conn) net.Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return nc
}
