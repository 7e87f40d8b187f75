package wake

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestRetryWaitAfterWakeIsFull checks that a waiter woken while its retry
// timer had fired too waits the full retry delay before its next attempt:
// the tick left in the timer must not end the next wait at once. It runs
// with the current timers and, in a child process, with those of Go 1.22
// (GODEBUG asynctimerchan=1, what a program whose go.mod says go 1.22 gets
// from Go 1.23 on), whose Stop leaves a tick that fired in the channel.
// select picks the wake-up or the tick at random, so the case is tried
// several times.
func TestRetryWaitAfterWakeIsFull(t *testing.T) {
	t.Parallel()
	if os.Getenv("DLM_TEST_OLD_TIMERS") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRetryWaitAfterWakeIsFull$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GODEBUG=asynctimerchan=1", "DLM_TEST_OLD_TIMERS=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("with the timers of Go 1.22 (asynctimerchan=1): %v\n%s", err, out)
		}
	}
	done := make(chan struct{})
	w := &Watcher{c: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
	ctx := context.Background()
	const delay = 200 * time.Millisecond
	for i := 0; i < 16; i++ {
		timer := time.NewTimer(time.Millisecond)
		time.Sleep(5 * time.Millisecond) // fired: a tick waits in timer.C
		signal(w.c)                      // and a release was announced
		if err := w.Wait(ctx, done, timer, Attempt{}); err != nil {
			t.Fatal(err)
		}
		w.Drain()
		start := time.Now() // before Reset: the timer cannot fire sooner than delay after it
		timer.Reset(delay)  // as lockLoop does after the next attempt
		if err := w.Wait(ctx, done, timer, Attempt{}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < delay {
			t.Fatalf("round %d: the wait after a wake-up ended after %v; want the full retry delay of %v", i, d, delay)
		}
		timer.Stop()
	}
}

// TestWaitWithoutWatcher checks how Wait ends for a caller that watches no
// channel (no node can subscribe, or no refusal yet): at its timer, with
// ctx's error when ctx ends, and with ErrDone when done closes — the
// Drain and Stop of a nil Watcher doing nothing.
func TestWaitWithoutWatcher(t *testing.T) {
	t.Parallel()
	var w *Watcher
	w.Drain()
	defer w.Stop()
	never := make(chan struct{})
	closed := make(chan struct{})
	close(closed)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		done  chan struct{}
		timer time.Duration
		want  error
	}{
		{"timer", context.Background(), never, time.Millisecond, nil},
		{"ctx ended", cancelled, never, time.Hour, context.Canceled},
		{"done", context.Background(), closed, time.Hour, ErrDone},
	} {
		timer := time.NewTimer(tc.timer)
		if err := w.Wait(tc.ctx, tc.done, timer, Attempt{Took: time.Millisecond}); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: Wait = %v; want %v", tc.name, err, tc.want)
		}
		timer.Stop()
	}
}
