//go:build go1.25

// synctest needs the Go 1.23 timer channels, which a go 1.22 module turns
// off by default; the go:debug line turns them on for this test binary.

//go:debug asynctimerchan=0

package adapterkit

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestDialShield checks a guarded call's context (dialshield.go): done at
// its caller's end unless a dial of the call is under way, then when the
// dial is over (the library's next Err); done at the node's Close, dial or
// not; no dial starts once the caller has ended; the node counts the dials
// under way until they end or the call returns.
func TestDialShield(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// steps drives the shield; endCaller and endLife end the
		// caller's context and the node's life.
		steps     func(t *testing.T, s *dialShield, endCaller, endLife func())
		wantDone  bool
		wantDials int32
	}{
		{"caller ends, no dial", func(t *testing.T, s *dialShield, endCaller, _ func()) {
			endCaller()
		}, true, 0},
		{"caller ends before a dial", func(t *testing.T, s *dialShield, endCaller, _ func()) {
			endCaller()
			if s.dialStarted() {
				t.Error("dialStarted() after the caller's end = true; want false")
			}
		}, true, 0},
		{"caller ends during a dial", func(t *testing.T, s *dialShield, endCaller, _ func()) {
			if !s.dialStarted() {
				t.Fatal("dialStarted() = false; want true")
			}
			endCaller()
		}, false, 1},
		{"caller ends during a dial, dial ends", func(t *testing.T, s *dialShield, endCaller, _ func()) {
			s.dialStarted()
			endCaller()
			synctest.Wait()
			if s.Err() == nil {
				t.Error("Err() at the end of a dial whose caller ended = nil; want an error: no request is sent")
			}
		}, true, 0},
		{"dial ends, caller waits", func(t *testing.T, s *dialShield, _, _ func()) {
			s.dialStarted()
			if err := s.Err(); err != nil {
				t.Errorf("Err() at the end of a dial whose caller waits = %v; want nil", err)
			}
		}, false, 0},
		{"dial ends, then caller ends", func(t *testing.T, s *dialShield, endCaller, _ func()) {
			s.dialStarted()
			s.Err()
			endCaller()
		}, true, 0},
		{"Close during a dial", func(t *testing.T, s *dialShield, _, endLife func()) {
			s.dialStarted()
			endLife()
		}, true, 1},
		{"released during a dial", func(t *testing.T, s *dialShield, _, _ func()) {
			s.dialStarted()
			s.release()
		}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				caller, endCaller := context.WithTimeout(context.Background(), time.Hour)
				defer endCaller()
				life, endLife := context.WithCancel(context.Background())
				defer endLife()
				var dials atomic.Int32
				s := newDialShield(caller, life, &dials)
				defer s.release()
				tc.steps(t, s, endCaller, endLife)
				synctest.Wait() // AfterFuncs have run
				select {
				case <-s.Done():
					if !tc.wantDone {
						t.Error("done; want not done")
					}
				default:
					if tc.wantDone {
						t.Error("not done; want done")
					}
				}
				if got := dials.Load(); got != tc.wantDials {
					t.Errorf("dials under way = %d; want %d", got, tc.wantDials)
				}
			})
		})
	}
}

// TestDialShieldContext checks what the library and the dial function see
// of a shield: no deadline (the library bounds a dial by its dial timeout),
// the caller's values, and the shield itself from a context derived from
// it, as the library derives one to greet the server within.
func TestDialShieldContext(t *testing.T) {
	t.Parallel()
	type key struct{}
	caller, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "v"), time.Hour)
	defer cancel()
	var dials atomic.Int32
	s := newDialShield(caller, context.Background(), &dials)
	defer s.release()
	if d, ok := s.Deadline(); ok {
		t.Errorf("Deadline() = %v, true; want none", d)
	}
	if v := s.Value(key{}); v != "v" {
		t.Errorf("Value(a caller's key) = %v; want v", v)
	}
	derived, stop := context.WithTimeout(s, time.Minute)
	defer stop()
	if got, _ := derived.Value(dialShieldKey{}).(*dialShield); got != s {
		t.Errorf("Value(dialShieldKey) of a derived context = %p; want the shield %p", got, s)
	}
}
