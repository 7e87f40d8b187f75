package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// appliedButFailed is a node that, while fail is set, runs each request on
// the server and then reports a failure, as a node whose reply was lost
// would, or one whose caller's context ended once the requests were sent:
// with cancel set, once quorum of the nodes sharing applied have run the
// request, the last of them ends the caller's context, and each waits for
// that end before it fails, so that a quorum has applied the request when
// the caller sees its context end.
type appliedButFailed struct {
	driver.Node
	mu      sync.Mutex
	fail    bool
	cancel  context.CancelFunc
	ended   <-chan struct{}
	applied *atomic.Int32
	quorum  int32
}

func (n *appliedButFailed) set(fail bool, cancel context.CancelFunc, ended <-chan struct{}, applied *atomic.Int32, quorum int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fail, n.cancel, n.ended, n.applied, n.quorum = fail, cancel, ended, applied, quorum
}

func (n *appliedButFailed) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	n.mu.Lock()
	fail, cancel, ended, applied, quorum := n.fail, n.cancel, n.ended, n.applied, n.quorum
	n.mu.Unlock()
	if !fail {
		return n.Node.Eval(ctx, s, keys, args)
	}
	if _, err := n.Node.Eval(context.WithoutCancel(ctx), s, keys, args); err != nil {
		return nil, err
	}
	if cancel != nil {
		if applied.Add(1) >= quorum {
			cancel()
		}
		<-ended
		return nil, context.Canceled
	}
	return nil, errors.New("read tcp: i/o timeout")
}

// TestNoHandOverAfterFailedExtend checks on real servers that a lock whose
// Extend failed — the reply lost, or the caller's context ended once the
// requests were sent — while the nodes applied the longer TTL, is not
// handed over to the next caller in line, whose TTL is shorter: that caller
// gets the lock from the nodes, under a secret of its own, and the nodes
// keep its key no longer than its TTL.
func TestNoHandOverAfterFailedExtend(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		name      string
		cancelCtx bool
	}{
		{"reply lost", false},
		{"context ended after the requests were sent", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srvs, raw := startNodes(t, 3)
			wrapped := make([]*appliedButFailed, len(raw))
			nodes := make([]driver.Node, len(raw))
			for j, n := range raw {
				wrapped[j] = &appliedButFailed{Node: n}
				nodes[j] = wrapped[j]
			}
			const ttl = 2 * time.Second
			m, err := dlm.New(nodes, dlm.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			key := fmt.Sprint("extended-", i)
			// A hand-over could only be tried with the Unlock within 20 ms
			// of the grant, which a loaded machine may never meet: the
			// outcome is checked on every try, a few tries give a timely
			// Unlock its chance, and TestNoHandOverAfterFailedExtendOnClock
			// proves the timely case on the fake clock.
			const maxTries = 5
			for try := 0; ; try++ {
				holder, err := m.Lock(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				granted := time.Now()
				res := make(chan lockResult, 1)
				go func() {
					l, err := m.Lock(ctx, key)
					res <- lockResult{l, err, time.Now()}
				}()
				waitUntil(t, "the receiver in line", func() bool { return dlm.LocalWaiters(m, key) == 1 })
				ectx, cancel := context.WithCancel(ctx)
				var applied atomic.Int32
				for _, n := range wrapped {
					if tc.cancelCtx {
						n.set(true, cancel, ectx.Done(), &applied, int32(len(wrapped)/2+1))
					} else {
						n.set(true, nil, nil, nil, 0)
					}
				}
				err = holder.Extend(ectx, time.Minute)
				for _, n := range wrapped {
					n.set(false, nil, nil, nil, 0)
				}
				cancel()
				if err == nil {
					t.Fatal("Extend succeeded; want it to fail with every reply lost")
				}
				// The extension failed on at least two nodes, after each
				// applied it (with the context ended, the second ended it);
				// the third may still be under way.
				if got := keptLonger(t, srvs, key, ttl); got < 2 {
					t.Fatalf("%d nodes keep the holder's key longer than %v after the failed Extend; want at least 2 (it was applied)", got, ttl)
				}
				timely := time.Since(granted) < 15*time.Millisecond
				if err := holder.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				r := <-res
				if r.err != nil {
					t.Fatal(r.err)
				}
				if dlm.SameGrant(holder, r.l) {
					t.Errorf("the lock whose Extend failed (%v) was handed over", err)
				}
				// The invariant: the nodes keep the receiver's key no
				// longer than its TTL.
				if got := keptLonger(t, srvs, key, ttl); got > 0 {
					t.Errorf("%d nodes keep the receiver's key longer than its TTL %v; want none", got, ttl)
				}
				if err := r.l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				// Only a timely Unlock could have handed the lock over.
				switch {
				case timely || t.Failed():
					return
				case try == maxTries-1:
					t.Logf("in %d tries the Unlock never came within 15ms of the grant (a busy machine): the outcome held on each", maxTries)
					return
				}
			}
		})
	}
}

// keptLonger returns on how many of srvs the lock key of key lives longer
// than ttl.
func keptLonger(t *testing.T, srvs []*redistest.Server, key string, ttl time.Duration) int {
	t.Helper()
	n := 0
	for _, s := range srvs {
		v, err := s.Do("PTTL", "redlock:{"+key+"}")
		if err != nil {
			t.Fatal(err)
		}
		if pttl, ok := v.(int64); !ok {
			t.Fatalf("PTTL = %v; want an integer", v)
		} else if time.Duration(pttl)*time.Millisecond > ttl {
			n++
		}
	}
	return n
}
