package redigo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
)

// slack is how much later than its context a call may return.
const slack = 500 * time.Millisecond

func TestContextDone(t *testing.T) {
	s := dlmtest.StartServer(t)
	n := openNode(t, "redis+redigo://"+s.Addr()+"?read_timeout=10s&write_timeout=10s")
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
	n := openNode(t, "redis+redigo://"+s.Addr()+"?pool_size=1")
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
		"rediss+redigo://" + s.Addr() + "?tls_ca_file=" + s.CAFile(),
		"rediss+redigo://" + s.Addr() + "?tls_insecure_skip_verify=true",
	} {
		if v, err := eval(openNode(t, url), echo, nil, []string{"tls"}); v != "tls" || err != nil {
			t.Errorf("Eval through %s = %v, %v; want tls, nil", url, v, err)
		}
	}
	// Without the CA the certificate is refused. Open does not fail, as for
	// any server it cannot reach; the calls do.
	n := openNode(t, "rediss+redigo://"+s.Addr())
	if v, err := eval(n, echo, nil, []string{"tls"}); err == nil {
		t.Errorf("Eval with an untrusted certificate = %v, nil; want an error", v)
	}
}
