package dlmtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Timing of the tests of abandoned requests. An Eval that returns before
// the server could have answered (the spin) was given up by the node when
// its context ended; one that returns later, on a loaded machine, is
// inconclusive and is run again with the spin doubled, up to spinTries
// times.
const (
	firstSpin = 800 * time.Millisecond // the server is busy this long, at first
	spinTries = 3
	giveUp    = 50 * time.Millisecond // the context ends this soon
	// doneBound is how long, at the least, an Eval with a done context
	// may take: it sends nothing, so it must not wait as a request does.
	// The bound is the larger of doneBound and 20 round trips measured
	// through the node just before (see roundTrip).
	doneBound = time.Second
)

// spinScript keeps the server busy for ARGV[1] microseconds. Redis answers
// nobody meanwhile, so only the client side can end the wait.
const spinScript = `
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat
	t = redis.call('TIME')
until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1])
return 1`

func testTimeout(t *testing.T, nt *nodeTester) {
	testAbandoned(t, nt, context.DeadlineExceeded, func() (context.Context, func()) {
		return context.WithTimeout(context.Background(), giveUp)
	})
}

func testCancel(t *testing.T, nt *nodeTester) {
	testAbandoned(t, nt, context.Canceled, func() (context.Context, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(giveUp, cancel)
		return ctx, func() { timer.Stop(); cancel() }
	})
}

// testAbandoned runs a script that outlasts the context newCtx returns and
// checks that Eval returns when the context ends, with want, before the
// server could have answered; and that the node then works again and does
// not read the late reply as the answer to a later request.
func testAbandoned(t *testing.T, nt *nodeTester, want error, newCtx func() (context.Context, func())) {
	for try, spin := 1, firstSpin; ; try, spin = try+1, 2*spin {
		ctx, cancel := newCtx()
		src := uniqueScript(spinScript)
		start := time.Now()
		v, err := nt.node.Eval(ctx, driver.NewScript(src), nil, []string{fmt.Sprint(spin.Microseconds())})
		took := time.Since(start)
		cancel()
		if took < spin {
			if !errors.Is(err, want) {
				t.Errorf("Eval of a %v script, context ending after %v = %s, %v; want an error wrapping %v", spin, giveUp, show(v), err, want)
			}
			break
		}
		if try == spinTries {
			t.Errorf("Eval of a %v script, its context ending after %v, returned after %v (%s, %v), %d times; want it to return before the server's answer",
				spin, giveUp, took, show(v), err, spinTries)
			break
		}
		t.Logf("inconclusive: Eval of a %v script, its context ending after %v, returned after %v; again with the spin doubled", spin, giveUp, took)
	}
	nt.checkUsable(t, "an abandoned request")
}

// roundTrip returns the slowest of a few Evals of a trivial script through
// the node: its pace at the moment.
func (nt *nodeTester) roundTrip(t *testing.T) time.Duration {
	t.Helper()
	var slowest time.Duration
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
		start := time.Now()
		_, err := nt.node.Eval(ctx, driver.NewScript(`return 1`), nil, nil)
		slowest = max(slowest, time.Since(start))
		cancel()
		if err != nil {
			t.Fatalf("Eval(return 1) = %v", err)
		}
	}
	return slowest
}

func testDoneContext(t *testing.T, nt *nodeTester) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	pinger, canPing := nt.node.(driver.Pinger)
	bound := max(doneBound, 20*nt.roundTrip(t))
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"deadline passed", expired, context.DeadlineExceeded},
	} {
		start := time.Now()
		v, err := nt.node.Eval(tc.ctx, driver.NewScript(`return 1`), nil, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s context: Eval = %s, %v; want an error wrapping %v", tc.name, show(v), err, tc.want)
		}
		if canPing {
			if err := pinger.Ping(tc.ctx); !errors.Is(err, tc.want) {
				t.Errorf("%s context: Ping = %v; want an error wrapping %v", tc.name, err, tc.want)
			}
		}
		if took := time.Since(start); took > bound {
			t.Errorf("%s context: took %v; want under %v", tc.name, took, bound)
		}
	}
	nt.checkUsable(t, "calls with done contexts")
}

func testConcurrency(t *testing.T, nt *nodeTester) {
	const goroutines, calls = 32, 20
	keys := make([]string, goroutines)
	for g := range keys {
		keys[g] = nt.key(fmt.Sprintf("counter-%02d", g))
	}
	incr := driver.NewScript(`return redis.call('INCR', KEYS[1])`)
	var wg sync.WaitGroup
	for _, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
				got, err := nt.node.Eval(ctx, incr, []string{key}, nil)
				cancel()
				if want := int64(i + 1); err != nil || got != want {
					t.Errorf("INCR %s call %d = %s, %v; want %d, nil", key, i+1, show(got), err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func testPing(t *testing.T, nt *nodeTester) {
	p, ok := nt.node.(driver.Pinger)
	if !ok {
		t.Logf("%T does not implement driver.Pinger; nothing to check", nt.node)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		t.Errorf("Ping = %v; want nil", err)
	}
}

func testAddr(t *testing.T, nt *nodeTester) {
	if a := nt.node.Addr(); a == "" || strings.Contains(a, "@") {
		t.Errorf("Addr() = %q; want host:port, never user information", a)
	}
}
