package redigo

import (
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
)

// TestServerDownAtOpen checks that a node opens while its server is down,
// fails calls meanwhile, and works once the server is back.
func TestServerDownAtOpen(t *testing.T) {
	s := dlmtest.StartServer(t)
	s.Kill()
	n := openNode(t, "redis+redigo://"+s.Addr())
	if v, err := eval(n, echo, nil, []string{"down"}); err == nil {
		t.Errorf("Eval with the server down = %v, nil; want an error", v)
	}
	s.Restart()
	if v, err := eval(n, echo, nil, []string{"up"}); v != "up" || err != nil {
		t.Errorf("Eval once the server is up = %v, %v; want up, nil", v, err)
	}
}

// TestServerRestart checks that connections pooled before a restart do not
// fail the calls after it.
func TestServerRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []dlmtest.ServerOption
		scheme string
	}{
		{"plain", nil, "redis+redigo://"},
		{"TLS", []dlmtest.ServerOption{dlmtest.WithTLS()}, "rediss+redigo://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dlmtest.StartServer(t, tc.opts...)
			url := tc.scheme + s.Addr()
			if ca := s.CAFile(); ca != "" {
				url += "?tls_ca_file=" + ca
			}
			n := openNode(t, url)
			if v, err := eval(n, echo, nil, []string{"before"}); v != "before" || err != nil {
				t.Fatalf("Eval = %v, %v; want before, nil", v, err)
			}
			s.Restart()
			for i := 0; i < 3; i++ {
				if v, err := eval(n, echo, nil, []string{"after"}); v != "after" || err != nil {
					t.Errorf("Eval #%d after the restart = %v, %v; want after, nil", i, v, err)
				}
			}
		})
	}
}

// TestOpenWhileBusy checks that a server that answers it is busy does not
// fail Open, as a wrong password does: it is as good as down for now.
func TestOpenWhileBusy(t *testing.T) {
	s := dlmtest.StartServer(t, dlmtest.WithArgs("--lua-time-limit", "50"))
	busy := openNode(t, "redis+redigo://"+s.Addr())
	spin := "local t = redis.call('TIME'); local s = t[1] * 1000000 + t[2]; " +
		"repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - s >= 800000; return 1"
	done := make(chan error, 1)
	go func() {
		_, err := eval(busy, spin, nil, nil)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	n, err := dlm.OpenNode("redis+redigo://" + s.Addr())
	if err != nil {
		t.Errorf("OpenNode while a script runs: %v; want the node opened", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the long script: %v", err)
	}
	if n != nil {
		defer n.Close()
		if v, err := eval(n, echo, nil, []string{"idle"}); v != "idle" || err != nil {
			t.Errorf("Eval once the script is done = %v, %v; want idle, nil", v, err)
		}
	}
}
