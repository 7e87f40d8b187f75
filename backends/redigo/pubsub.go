package redigo

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

var _ driver.Subscriber = (*node)(nil)

// Subscribe dials a connection of its own with the pool's dial function
// (a pooled connection would go back to the pool on Close, still in pub/sub
// mode) and starts reading it. The subscription ends at the first failure of
// that connection: package dlm opens another.
func (n *node) Subscribe(ctx context.Context, h driver.PubSubHandler) (_ driver.Subscription, err error) {
	defer n.panics().RecoverTo(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n.gate.Closed() {
		return nil, errClosed
	}
	var c redis.Conn
	switch {
	case n.pool.DialContext != nil:
		c, err = n.pool.DialContext(ctx)
	case n.pool.Dial != nil:
		c, err = n.pool.Dial()
	default:
		return nil, errors.New("redigo: the pool has no Dial or DialContext function to open a subscription with")
	}
	if err != nil {
		return nil, n.fail(ctx, err)
	}
	s := &subscription{n: n, psc: redis.PubSubConn{Conn: c}, h: h}
	// A panic in redigo, the connection or the handler ends the
	// subscription as a failure would; after one in Receive the connection
	// is left as it is (see recover.go).
	s.Reader = n.panics().StartReader(s.receive, s.deliver, c.Close, net.ErrClosed)
	return s, nil
}

type subscription struct {
	*adapterkit.Reader
	n   *node
	psc redis.PubSubConn
	h   driver.PubSubHandler
	mu  sync.Mutex // serializes writes
}

// receive waits for what comes next on the connection. No read deadline:
// messages come whenever they come.
func (s *subscription) receive() (any, error) {
	m := s.psc.ReceiveWithTimeout(0)
	if err, ok := m.(error); ok {
		return nil, err
	}
	return m, nil
}

// deliver hands what the connection received to the handler.
func (s *subscription) deliver(m any) {
	switch m := m.(type) {
	case redis.Message:
		s.h.Message(m.Channel, string(m.Data))
	case redis.Subscription:
		if m.Kind == "subscribe" {
			s.h.Subscribed(m.Channel)
		}
	}
}

func (s *subscription) Subscribe(ctx context.Context, channels ...string) error {
	return s.send(ctx, "SUBSCRIBE", channels)
}

func (s *subscription) Unsubscribe(ctx context.Context, channels ...string) error {
	return s.send(ctx, "UNSUBSCRIBE", channels)
}

// send writes cmd. redigo bounds the write by the connection's write
// timeout; a write that fails closes the connection, which ends the reader.
func (s *subscription) send(ctx context.Context, cmd string, channels []string) (err error) {
	defer s.n.panics().RecoverTo(&err)
	if err := ctx.Err(); err != nil {
		return err
	}
	args := adapterkit.Args(channels)
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.psc.Conn.Send(cmd, args...)
	if err == nil {
		err = s.psc.Conn.Flush()
	}
	if err != nil {
		s.psc.Conn.Close()
		return s.n.fail(ctx, err)
	}
	return nil
}

// Close closes the connection and waits for the reader to end. Closing a
// subscription that already ended is not an error: redigo's Close of a
// connection that failed returns that failure again. When closing panics,
// the connection may still be open: Close returns the [driver.PanicError]
// at once.
func (s *subscription) Close() error {
	select {
	case <-s.Done():
		return nil
	default:
	}
	return s.Reader.Close()
}
