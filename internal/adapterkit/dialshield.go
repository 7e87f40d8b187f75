package adapterkit

import (
	"context"
	"sync"
	"sync/atomic"
)

// A rueidis client dials a connection it lacks inside the next call that
// needs it, and greets the server (HELLO, AUTH, SELECT) within that call's
// context. A node whose handshake takes longer than its callers' deadlines
// would then throw each connection away at a caller's deadline, after the
// server had accepted it, and dial again for the next call: a connection
// per request, and no request answered. A call on the guarded path
// (guard.go), whose caller stops waiting at its context's end anyway, hands
// the client a dialShield instead: a dial that the call starts is made to
// its end, within the node's life and the dial timeout, and serves the
// next calls, while the request itself is sent only if its caller is still
// waiting once the dial is over.

// dialShield is the context a guarded call of a node that made its client
// hands the library. It is done when the node closes, or when the caller's
// context ends, unless a dial that the call started is under way: then
// when the dial is over. The node's dial function ([conns.dial]) finds it
// in the context of a dial and makes the connection within the node's life
// (life) rather than the call's.
//
// The end of the dial is the first time the library asks for Err after
// the dial function was called: rueidis and valkey-go do so as they send
// the request on the new connection (or give up on a failed dial), and in
// the meantime greet the server within a context of their own derived
// from this one. Should a release ask for Err during the greeting, the
// dial would be cut short at the caller's end, as before there was a
// shield; should it never ask, the request would be sent late, and
// release ends the shield when the library returns.
type dialShield struct {
	context.Context // cancelled by end
	caller          context.Context
	life            context.Context
	cancel          context.CancelFunc
	// dials counts the node's shielded dials under way.
	dials *atomic.Int32

	mu      sync.Mutex
	dialing bool

	stopCaller, stopLife func() bool
}

// dialShieldKey finds a call's dialShield in the context of a dial.
type dialShieldKey struct{}

// newDialShield returns the shield of a call within caller on a node that
// lives as long as life; dials counts the node's dials under way. Its
// release must be called once the library returns.
func newDialShield(caller, life context.Context, dials *atomic.Int32) *dialShield {
	ctx, cancel := context.WithCancel(context.WithoutCancel(caller))
	s := &dialShield{Context: ctx, caller: caller, life: life, cancel: cancel, dials: dials}
	s.stopCaller = context.AfterFunc(caller, s.callerEnded)
	s.stopLife = context.AfterFunc(life, cancel)
	return s
}

// Value returns s for dialShieldKey, and otherwise the caller's values.
func (s *dialShield) Value(key any) any {
	if key == (dialShieldKey{}) {
		return s
	}
	return s.Context.Value(key)
}

// Err ends a dial under way (see dialShield) and returns the shield's
// error: once the caller's context has ended, no request is sent.
func (s *dialShield) Err() error {
	s.mu.Lock()
	s.endDialLocked()
	if s.caller.Err() != nil {
		s.cancel()
	}
	s.mu.Unlock()
	return s.Context.Err()
}

// callerEnded ends the shield at the caller's end, unless a dial is under
// way.
func (s *dialShield) callerEnded() {
	s.mu.Lock()
	if !s.dialing {
		s.cancel()
	}
	s.mu.Unlock()
}

// dialStarted records a dial of the call and reports whether it may go on:
// not once the shield or the caller's context has ended.
func (s *dialShield) dialStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Context.Err() != nil || s.caller.Err() != nil {
		return false
	}
	if !s.dialing {
		s.dialing = true
		s.dials.Add(1)
	}
	return true
}

func (s *dialShield) endDialLocked() {
	if s.dialing {
		s.dialing = false
		s.dials.Add(-1)
	}
}

// release ends the shield, once the library has returned.
func (s *dialShield) release() {
	s.stopCaller()
	s.stopLife()
	s.mu.Lock()
	s.endDialLocked()
	s.mu.Unlock()
	s.cancel()
}
