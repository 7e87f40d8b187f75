package redigo

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/gomodule/redigo/redis"
)

var (
	_ redis.ConnWithContext = (*conn)(nil)
	_ redis.ConnWithTimeout = (*conn)(nil)
)

// conn is a connection made by a node's own pool, which keeps its network
// connection so that the pool can check it before reuse.
type conn struct {
	redis.Conn
	nc net.Conn
}

// DoContext, ReceiveContext, DoWithTimeout and ReceiveWithTimeout pass
// through: redigo looks for them on the connection the pool dialled.

func (c *conn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	return redis.DoContext(c.Conn, ctx, cmd, args...)
}

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
	nc := cc.nc
	if tc, ok := nc.(*tls.Conn); ok {
		// Unread bytes under TLS would be as unexpected as in the clear:
		// an idle connection has been sent nothing.
		nc = tc.NetConn()
	}
	return connCheck(nc)
}
