package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// TestRestartGuardNotSoonerThanWindow asks a node that has just restarted
// empty, right after its INFO uptime_in_seconds turned to 1, under a window
// of 1 s: the node started after the restart began, less than the window
// before it is asked, so the guard must not count it. Redis reports its
// uptime in whole seconds, from start and current times both cut to the
// second: a node up for a few milliseconds reports 1 once the wall clock
// passes a second boundary, and a guard that took that figure for the time
// since the start counted the node up to a second early: at once, under a
// window of 1 s (the double grant of the safety matrix's restart-guard
// cell). Each attempt restarts the node half a second before a second
// boundary, so that the next boundary comes soon after it starts; an
// attempt that took longer than the window (a loaded machine) proves
// nothing and is made again.
func TestRestartGuardNotSoonerThanWindow(t *testing.T) {
	t.Parallel()
	const window = time.Second
	for _, tc := range []struct {
		name string
		opts []dlm.ManagerOption
	}{
		{"plain", nil},
		{"fencing", []dlm.ManagerOption{dlm.WithFencing()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := redistest.StartServer(t)
			cfg, err := driver.ParseURL("redis://" + s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			opts := append([]dlm.ManagerOption{dlm.WithTTL(window), dlm.WithRestartGuard(window), dlm.WithNodeTimeout(window / 2)}, tc.opts...)
			m, err := dlm.New([]driver.Node{resp.NewNode(cfg)}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			ctx := context.Background()
			const attempts = 20
			for i := range attempts {
				now := time.Now()
				next := now.Truncate(time.Second).Add(time.Second)
				time.Sleep(time.Until(next.Add(-window / 2)))
				began := time.Now()
				s.Restart() // empty, at once
				for uptime(t, s) < 1 {
					time.Sleep(time.Millisecond)
				}
				l, err := m.TryLock(ctx, fmt.Sprintf("k%d", i))
				asked := time.Since(began)
				if asked >= window {
					t.Logf("attempt %d: the node was asked %v after its restart began, not within the window: again", i, asked)
					if l != nil {
						_ = l.Unlock(ctx)
					}
					continue
				}
				if err == nil {
					_ = l.Unlock(ctx)
					t.Fatalf("a node restarted empty less than %v ago (uptime_in_seconds 1) was counted under a window of %v", asked, window)
				}
				var nerr *dlm.NodeError
				if !errors.As(err, &nerr) || !errors.Is(nerr, dlm.ErrNodeRestarted) {
					t.Logf("attempt %d: TryLock = %v, not the guard's answer: again", i, err)
					continue
				}
				return
			}
			t.Fatalf("no attempt in %d asked the node within %v of its restart: the machine is too slow for this test", attempts, window)
		})
	}
}

// uptime returns s's INFO uptime_in_seconds.
func uptime(t *testing.T, s *redistest.Server) int {
	t.Helper()
	v, err := s.Do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := v.(string)
	for _, line := range strings.Split(info, "\n") {
		if f, ok := strings.CutPrefix(strings.TrimSpace(line), "uptime_in_seconds:"); ok {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("uptime_in_seconds: %v", err)
			}
			return n
		}
	}
	t.Fatal("INFO server has no uptime_in_seconds")
	return 0
}

// guardSettled is how long a node that has just started waits out a
// restart-guard window at the most: INFO counts uptime in whole seconds,
// so the guard counts the node once it has been up for window, and at the
// latest once up for window rounded up to the second, plus a second.
func guardSettled(window time.Duration) time.Duration {
	return (window + time.Second - 1).Truncate(time.Second) + time.Second
}
