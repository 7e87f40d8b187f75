package adapterkit

import (
	"sync"
)

// Shards is the bookkeeping of a sharded subscription, on a node that is a
// Redis Cluster: package dlm publishes wake-ups on shard channels
// (SPUBLISH), which reach the subscribers of the channel's slot's master
// only, so the subscription keeps one connection per master, of the client
// library's type C, opened on first use. It ends, as a whole, when any of
// its connections fails; package dlm then opens another, which finds the
// masters anew (after a failover or a slot migration, say).
//
// Make one with [NewShards]; the zero value is not usable.
type Shards[C comparable] struct {
	panics Panics
	// closeConn closes one connection.
	closeConn func(C) error
	// ended is the error of a request after the end.
	ended error
	hmu   sync.Mutex // one handler call at a time, whichever connection
	done  chan struct{}

	mu      sync.Mutex
	conns   map[string]C // by master address
	isEnded bool
	readers sync.WaitGroup
	// closeErr is the first panic closing the connections, set before
	// done is closed.
	closeErr error
}

// NewShards returns the bookkeeping of a new sharded subscription. Its
// connections are closed by closeConn, under p; requests after the end fail
// with ended.
func NewShards[C comparable](p Panics, closeConn func(C) error, ended error) *Shards[C] {
	return &Shards[C]{panics: p, closeConn: closeConn, ended: ended, done: make(chan struct{}), conns: map[string]C{}}
}

// Conn returns the connection to the master at addr. The first time, it
// opens one with open, under the subscription's lock, and runs read(c) on a
// goroutine of its own; when read returns, the whole subscription ends.
func (s *Shards[C]) Conn(addr string, open func() (C, error), read func(C)) (C, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero C
	if s.isEnded {
		return zero, s.ended
	}
	if c, ok := s.conns[addr]; ok {
		return c, nil
	}
	c, err := open()
	if err != nil {
		return zero, err
	}
	s.conns[addr] = c
	s.readers.Add(1)
	go func() {
		defer s.readers.Done()
		defer s.End()
		read(c)
	}()
	return c, nil
}

// Handle calls f, which hands what a connection received to the
// subscription's handler, one call at a time across the connections. A
// handler that panics leaves the lock unlocked, so that the other
// connections' readers, which may be waiting for it, go on to their end.
func (s *Shards[C]) Handle(f func()) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	f()
}

// Forget leaves c out of the connections End closes: a connection in an
// unknown state after a panic in the library, whose Close may block.
func (s *Shards[C]) Forget(c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, sc := range s.conns {
		if sc == c {
			delete(s.conns, addr)
		}
	}
}

// End closes every connection and marks the subscription done, once.
func (s *Shards[C]) End() {
	s.mu.Lock()
	if s.isEnded {
		s.mu.Unlock()
		return
	}
	s.isEnded = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		if err := s.panics.Close(func() error { return s.closeConn(c) }); IsPanic(err) && s.closeErr == nil {
			s.closeErr = err
		}
	}
	close(s.done)
}

// Done is closed when the subscription has ended.
func (s *Shards[C]) Done() <-chan struct{} { return s.done }

// Close ends the subscription and waits for the readers to end. When
// closing a connection panicked, that connection may still be open: Close
// returns the [driver.PanicError] without waiting, and its reader ends when
// the connection fails.
func (s *Shards[C]) Close() error {
	s.End()
	<-s.done
	if s.closeErr != nil {
		return s.closeErr
	}
	s.readers.Wait()
	return nil
}
