package adapterkit

import (
	"context"
	"sync"
)

// Gate keeps a node's calls apart from its Close: a call enters only while
// the node is open, and Close, once it has closed the gate, knows that no
// call is inside and none will enter; it can then wait for the goroutines
// that calls left running ([Gate.Go]). The zero value is an open gate.
type Gate struct {
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
}

// Enter reports whether the gate is open and then holds Close off until
// Leave. A call that finds it closed does not Leave.
func (g *Gate) Enter() bool {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return false
	}
	return true
}

// Leave ends what Enter began.
func (g *Gate) Leave() { g.mu.RUnlock() }

// Closed reports whether the gate is closed.
func (g *Gate) Closed() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.closed
}

// Close closes the gate once the calls inside have left, and reports
// whether it was open.
func (g *Gate) Close() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	open := !g.closed
	g.closed = true
	return open
}

// Wait waits for the goroutines that Go started.
func (g *Gate) Wait() { g.wg.Wait() }

// spawning counts a goroutine about to start, unless the gate is closed:
// counted under the gate, it is counted before Close can Wait.
func (g *Gate) spawning() bool {
	if !g.Enter() {
		return false
	}
	g.wg.Add(1)
	g.Leave()
	return true
}

// Go runs call(ctx) and returns its result, or returns ctx.Err() as soon as ctx
// is done: for a client that does not notice a cancellation, call runs on a
// goroutine of its own, which the caller waits for only as long as ctx
// allows, and which Wait waits for. A result that is there as ctx ends is
// kept. A ctx that cannot end needs no goroutine. On a closed gate it
// returns closed.
func (g *Gate) Go(ctx context.Context, closed error, call func(context.Context) (any, error)) (any, error) {
	if ctx.Done() == nil {
		if g.Closed() {
			return nil, closed
		}
		return call(ctx)
	}
	if !g.spawning() {
		return nil, closed
	}
	done := make(chan result, 1)
	go func() {
		defer g.wg.Done()
		v, err := call(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // finished as ctx ended: keep its answer
			return r.v, r.err
		default:
			return nil, ctx.Err()
		}
	}
}

// result is what a call's goroutine hands back.
type result struct {
	v   any
	err error
}
