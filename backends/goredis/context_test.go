package goredis

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
)

// slack is how much later than its context a call may return.
const slack = 500 * time.Millisecond

func TestContextDone(t *testing.T) {
	s := dlmtest.StartServer(t)
	n := openNode(t, "redis+goredis://"+s.Addr()+"?read_timeout=10s&write_timeout=10s")
	script := driver.NewScript(echo)
	if v, err := eval(n, echo, nil, []string{"warm"}); v != "warm" || err != nil {
		t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
	}

	t.Run("AlreadyDone", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := n.Eval(ctx, script, nil, []string{"x"}); !errors.Is(err, context.Canceled) {
			t.Errorf("Eval with a cancelled context = %v; want context.Canceled", err)
		}
		if err := n.(interface{ Ping(context.Context) error }).Ping(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Ping with a cancelled context = %v; want context.Canceled", err)
		}
	})

	s.Pause()
	defer s.Resume()
	t.Run("Deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := n.Eval(ctx, script, nil, []string{"x"})
		if el := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || el > 100*time.Millisecond+slack {
			t.Errorf("Eval on a paused server with a 100ms deadline = %v after %v; want context.DeadlineExceeded", err, el)
		}
	})
	t.Run("CancelBeforeDeadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := n.Eval(ctx, script, nil, []string{"x"})
		if el := time.Since(start); !errors.Is(err, context.Canceled) || el > 100*time.Millisecond+slack {
			t.Errorf("Eval on a paused server cancelled after 100ms = %v after %v; want context.Canceled", err, el)
		}
	})
}

// TestLateReplyNotReused checks that a connection whose request timed out is
// not reused: its late reply must not answer the next request.
func TestLateReplyNotReused(t *testing.T) {
	s := dlmtest.StartServer(t)
	n := openNode(t, "redis+goredis://"+s.Addr()+"?pool_size=1")
	script := driver.NewScript(echo)
	if v, err := eval(n, echo, nil, []string{"warm"}); v != "warm" || err != nil {
		t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
	}
	s.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := n.Eval(ctx, script, nil, []string{"late"})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Eval on a paused server = %v; want context.DeadlineExceeded", err)
	}
	s.Resume()
	for i := 0; i < 3; i++ {
		if v, err := eval(n, echo, nil, []string{"fresh"}); v != "fresh" || err != nil {
			t.Errorf("Eval #%d after Resume = %v, %v; want fresh, nil", i, v, err)
		}
	}
}

func TestTLS(t *testing.T) {
	s := dlmtest.StartServer(t, dlmtest.WithTLS())
	for _, url := range []string{
		"rediss+goredis://" + s.Addr() + "?tls_ca_file=" + s.CAFile(),
		"rediss+goredis://" + s.Addr() + "?tls_insecure_skip_verify=true",
	} {
		if v, err := eval(openNode(t, url), echo, nil, []string{"tls"}); v != "tls" || err != nil {
			t.Errorf("Eval through %s = %v, %v; want tls, nil", url, v, err)
		}
	}
	// Without the CA the certificate is refused. Open does not fail, as for
	// any server it cannot reach; the calls do.
	n := openNode(t, "rediss+goredis://"+s.Addr())
	if v, err := eval(n, echo, nil, []string{"tls"}); err == nil {
		t.Errorf("Eval with an untrusted certificate = %v, nil; want an error", v)
	}
}

// TestCloseWaitsForAbandonedCalls checks that no goroutine of a call given up
// on outlives the Close of a node that owns its client.
func TestCloseWaitsForAbandonedCalls(t *testing.T) {
	s := dlmtest.StartServer(t)
	n, err := dlm.OpenNode("redis+goredis://" + s.Addr() + "?read_timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	s.Pause()
	defer s.Resume()
	for i := 0; i < 4; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		if _, err := n.Eval(ctx, driver.NewScript(echo), nil, []string{"x"}); !errors.Is(err, context.Canceled) {
			t.Errorf("Eval on a paused server, cancelled = %v; want context.Canceled", err)
		}
	}
	if !callsRunning() {
		t.Fatal("no call goroutine runs after the cancelled calls; the test checks nothing")
	}
	if err := n.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if callsRunning() {
		t.Error("a call's goroutine is still running after Close")
	}
}

// callsRunning reports whether a goroutine of node.wait is running.
func callsRunning() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte("goredis.(*node).wait.func"))
		}
		buf = make([]byte, 2*len(buf))
	}
}
