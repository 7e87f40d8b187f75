package rueidis

import (
	"context"
	"errors"
	"fmt"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
)

// attempt is one call of rueidis.NewClient, shared by the calls that wait
// for it.
type attempt struct {
	done chan struct{} // closed when c and err are set
	c    rueidisclient.Client
	err  error
}

// client returns the node's client, connecting first if the server was down
// at Open. rueidis.NewClient takes no context, so it runs on a goroutine of
// its own that ends within twice the dial timeout; the caller waits for it
// only as long as ctx allows, and concurrent callers share it.
func (n *node) client(ctx context.Context) (rueidisclient.Client, error) {
	if ref := n.ref.Load(); ref != nil {
		return ref.Client, nil
	}
	a, err := n.attempt()
	if err != nil {
		return nil, err
	}
	select {
	case <-a.done:
		return a.c, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// attempt returns the connection attempt under way, or starts one.
func (n *node) attempt() (*attempt, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ref := n.ref.Load(); ref != nil { // connected meanwhile
		a := &attempt{done: make(chan struct{}), c: ref.Client}
		close(a.done)
		return a, nil
	}
	if n.dialing == nil {
		if !n.spawning() {
			return nil, errClosed
		}
		n.dialing = &attempt{done: make(chan struct{})}
		go n.dial(n.dialing)
	}
	return n.dialing, nil
}

// dial makes attempt a. A client made after Close is closed at once.
func (n *node) dial(a *attempt) {
	defer n.wg.Done()
	c, err := n.newClient()
	switch {
	case errors.Is(err, context.DeadlineExceeded): // rueidis' own handshake timeout
		err = fmt.Errorf("rueidis: connect %s: no answer within the dial timeout (%v)", n.addr, n.opt.Dialer.Timeout)
	case err != nil:
		err = driver.RedactError(fmt.Errorf("rueidis: connect %s: %w", n.addr, err), n.opt.Password)
	}
	// Under calls' read lock, Close either comes after the client is stored
	// (and closes it) or before the check (and dial closes it).
	n.calls.RLock()
	closed := n.closed.Load()
	if err == nil && !closed {
		n.ref.Store(&clientRef{c})
		n.sawReply()
	}
	n.calls.RUnlock()
	n.mu.Lock()
	n.dialing = nil
	n.mu.Unlock()
	if err == nil && closed {
		n.closeClient(c)
		c, err = nil, errClosed
	}
	a.c, a.err = c, err
	close(a.done)
}
