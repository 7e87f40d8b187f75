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

// Timing of the tests of abandoned requests. The bound is far below the spin
// and far above the deadline, for two shared cores under -race.
const (
	spin       = 800 * time.Millisecond // the server is busy this long
	giveUp     = 50 * time.Millisecond  // the context ends this soon
	giveUpSlop = 500 * time.Millisecond // Eval must have returned by now
	doneBound  = time.Second            // Eval with a done context returns by now
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
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	testAbandoned(ctx, t, nt, context.DeadlineExceeded)
}

func testCancel(t *testing.T, nt *nodeTester) {
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(giveUp, cancel)
	defer timer.Stop()
	testAbandoned(ctx, t, nt, context.Canceled)
}

// testAbandoned runs a script that outlasts ctx and checks that Eval returns
// soon after ctx ends, with want, and that the node then works again and
// does not read the late reply as the answer to a later request.
func testAbandoned(ctx context.Context, t *testing.T, nt *nodeTester, want error) {
	src := uniqueScript(spinScript)
	start := time.Now()
	v, err := nt.node.Eval(ctx, driver.NewScript(src), nil, []string{fmt.Sprint(spin.Microseconds())})
	took := time.Since(start)
	if !errors.Is(err, want) {
		t.Errorf("Eval of a %v script, context ending after %v = %s, %v; want an error wrapping %v", spin, giveUp, show(v), err, want)
	}
	if took > giveUpSlop {
		t.Errorf("Eval of a %v script returned after %v, its context ending after %v; want under %v", spin, took, giveUp, giveUpSlop)
	}
	nt.checkUsable(t, "an abandoned request")
}

func testDoneContext(t *testing.T, nt *nodeTester) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	pinger, canPing := nt.node.(driver.Pinger)
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
		if took := time.Since(start); took > doneBound {
			t.Errorf("%s context: took %v; want under %v", tc.name, took, doneBound)
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
