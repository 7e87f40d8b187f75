//go:build go1.25

// The round's use of each node's learned timeout ([RTO]) on
// testing/synctest's fake clock. The build constraint keeps the module's
// go 1.22 line honest; the go:debug line turns on the Go 1.23 timer
// channels synctest needs.

//go:debug asynctimerchan=0

package round

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRoundLearnsTimeouts checks how a round waits for its nodes and what
// it learns: a round of a learned timeout waits the longest timeout of the
// nodes it asks, the cap for a node that never answered; a reply is a sample of its node's round trip; a request
// that waited its node's whole timeout in vain doubles it, up to the cap,
// one that failed otherwise (a refused connection) teaches nothing; a
// request of a fixed timeout (Cap not above Timeout) waits that timeout
// and backs nothing off, but its replies are samples too.
func TestRoundLearnsTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const floor, limit = 250 * ms, time.Second
		refused := errors.New("connection refused")
		var mu sync.Mutex
		healthy := true // every node answers at once
		up := func() bool {
			mu.Lock()
			defer mu.Unlock()
			return healthy
		}
		calls := []Call{
			func(ctx context.Context, _ *Request) (any, error) { // dies
				if up() {
					return int64(1), nil
				}
				<-ctx.Done()
				return nil, ctx.Err()
			},
			func(ctx context.Context, _ *Request) (any, error) { // answers in 100 ms
				if up() {
					return int64(1), nil
				}
				select {
				case <-time.After(100 * ms):
					return int64(1), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
			func(context.Context, *Request) (any, error) { // refuses connections
				if up() {
					return int64(1), nil
				}
				return nil, refused
			},
		}
		pool := NewPool()
		defer pool.Stop()
		r := New(pool, calls, func(i int, err error) error { return &nodeErr{i, err} }, errRestarted)
		learned := &Request{Op: "unlock", Want: 1, Timeout: floor, Cap: limit}
		fixed := &Request{Op: "unlock", Want: 1, Timeout: floor}
		for i := range calls {
			if got := r.Timeout(i, floor, limit); got != limit {
				t.Errorf("node %d's timeout before any reply is %v; want the cap %v", i, got, limit)
			}
		}
		if v, _ := r.Poll(context.Background(), learned); v.Yes != 3 {
			t.Fatalf("Poll of healthy nodes = %d yes; want 3", v.Yes)
		}
		mu.Lock()
		healthy = false
		mu.Unlock()
		// Node 1's samples: 0, then 100 ms each round.
		ref := rfc6298{}
		ref.sample(0)
		for _, step := range []struct {
			req  *Request
			took time.Duration
			want [3]time.Duration // each node's timeout after it; node 1's from ref
		}{
			{learned, 250 * ms, [3]time.Duration{500 * ms, 0, floor}},
			{learned, 500 * ms, [3]time.Duration{limit, 0, floor}},
			{learned, limit, [3]time.Duration{limit, 0, floor}},
			{fixed, floor, [3]time.Duration{limit, 0, floor}},
		} {
			ref.sample(100 * ms)
			step.want[1] = ref.rto(floor, limit)
			start := time.Now()
			v, _ := r.Poll(context.Background(), step.req)
			if d := time.Since(start); d != step.took {
				t.Errorf("Poll took %v; want %v", d, step.took)
			}
			if v.Yes != 1 || v.Failed != 2 {
				t.Errorf("Poll = %d yes, %d failed; want 1, 2", v.Yes, v.Failed)
			}
			for i, w := range step.want {
				if got := r.Timeout(i, floor, limit); got < w-5*time.Microsecond || got > w+5*time.Microsecond {
					t.Errorf("after a Poll of %v, node %d's timeout is %v; want %v", step.took, i, got, w)
				}
			}
		}
	})
}
