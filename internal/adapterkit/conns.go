package adapterkit

import (
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// rueidis' Client.Close sends QUIT on each connection and waits for the
// answer, and stops the PING that would otherwise give up on a silent
// server: closing a client whose server is paused or cut off waits until the
// server answers, which may be never. A node that made its client therefore
// dials through conns, and when Close has not finished after the write
// timeout, it closes the sockets under the client, which then finishes at
// once.

// conns dials connections as rueidis does and keeps the open ones.
type conns struct {
	// replyLimit guards each connection ([LimitReplies]; 0: none):
	// rueidis and valkey-go allocate what a reply's header announces.
	replyLimit int64

	mu     sync.Mutex
	open   map[*conn]struct{}
	closed bool
}

// dial is a [ClientOptions.DialFn].
func (cs *conns) dial(dst string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
	var nc net.Conn
	var err error
	if cfg != nil {
		nc, err = tls.DialWithDialer(d, "tcp", dst, cfg)
	} else {
		nc, err = d.Dial("tcp", dst)
	}
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: LimitReplies(nc, cs.replyLimit), cs: cs}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		nc.Close()
		return nil, net.ErrClosed
	}
	if cs.open == nil {
		cs.open = make(map[*conn]struct{})
	}
	cs.open[c] = struct{}{}
	return c, nil
}

// closeAll closes the open connections and fails later dials.
func (cs *conns) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	open := cs.open
	cs.open = nil
	cs.mu.Unlock()
	for c := range open {
		c.Conn.Close()
	}
}

// conn is a connection that leaves its conns when closed.
type conn struct {
	net.Conn
	cs *conns
}

func (c *conn) Close() error {
	c.cs.mu.Lock()
	delete(c.cs.open, c)
	c.cs.mu.Unlock()
	return c.Conn.Close()
}

// closeClient closes c, a client the node made, waiting at most closeGrace
// for the server to answer before closing its connections. It returns a
// [driver.PanicError] when c's Close panicked.
func (n *Pipelined[C, D]) closeClient(c C) error {
	done := make(chan error, 1)
	go func() { done <- n.panics().Do(func() { n.lib.Close(c) }) }()
	t := time.NewTimer(n.closeGrace)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		n.conns.closeAll()
		err = <-done
	}
	// A cluster client's Close closes its connections on goroutines of
	// their own and returns at once, and a connection the client is making
	// as it closes may be left open, with a goroutine pinging it: close
	// what is still open.
	n.conns.closeAll()
	return err
}
