package adapterkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/dlmgo/redlock/dlm/driver"
)

// attempt is one call of the library's Connect, shared by the calls that
// wait for it.
type attempt[C any] struct {
	done chan struct{} // closed when c and err are set
	c    C
	err  error
}

// client returns the node's client, connecting first if the server was down
// at Open. Connect takes no context, so it runs on a goroutine of its own
// that ends within twice the dial timeout; the caller waits for it only as
// long as ctx allows, and concurrent callers share it.
func (n *Pipelined[C, D]) client(ctx context.Context) (C, error) {
	if c := n.ref.Load(); c != nil {
		return *c, nil
	}
	var zero C
	a, err := n.attempt()
	if err != nil {
		return zero, n.ctxError(ctx, err)
	}
	select {
	case <-a.done:
		if a.err != nil {
			return zero, n.ctxError(ctx, a.err)
		}
		return a.c, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// attempt returns the connection attempt under way, or starts one.
func (n *Pipelined[C, D]) attempt() (*attempt[C], error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.ref.Load(); c != nil { // connected meanwhile
		a := &attempt[C]{done: make(chan struct{}), c: *c}
		close(a.done)
		return a, nil
	}
	if n.dialing == nil {
		if !n.gate.spawning() {
			return nil, n.errs.closed
		}
		n.dialing = &attempt[C]{done: make(chan struct{})}
		go n.dial(n.dialing)
	}
	return n.dialing, nil
}

// dial makes attempt a. A client made after Close is closed at once.
func (n *Pipelined[C, D]) dial(a *attempt[C]) {
	defer n.gate.wg.Done()
	c, err := n.newClient()
	switch {
	case errors.Is(err, context.DeadlineExceeded): // the client's own handshake timeout
		err = fmt.Errorf("%s: connect %s: no answer within the dial timeout (%v)", n.lib.Name(), n.addr, n.opt.Dialer.Timeout)
	case err != nil:
		err = driver.RedactError(fmt.Errorf("%s: connect %s: %w", n.lib.Name(), n.addr, err), n.password)
	}
	// Inside the gate, Close either comes after the client is stored (and
	// closes it) or before (and dial closes it).
	open := n.gate.Enter()
	if open {
		if err == nil {
			n.ref.Store(&c)
			n.sawReply()
		}
		n.gate.Leave()
	}
	n.mu.Lock()
	n.dialing = nil
	n.mu.Unlock()
	if err == nil && !open {
		n.closeClient(c)
		var zero C
		c, err = zero, n.errs.closed
	}
	a.c, a.err = c, err
	close(a.done)
}

// ctxError is [ctxError] with the node's own client timeout.
func (n *Pipelined[C, D]) ctxError(ctx context.Context, err error) error {
	return ctxError(ctx, err, n.errs.clientTimeout)
}
