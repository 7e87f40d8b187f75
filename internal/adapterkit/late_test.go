//go:build go1.25

package adapterkit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestLateWait checks on virtual time when Late.Wait returns: at once while
// no request is late or the pool has an idle connection; otherwise as soon
// as a late request ends, and at its context's deadline when none ends.
func TestLateWait(t *testing.T) {
	const (
		deadline = 250 * time.Millisecond // the late request's
		reply    = 400 * time.Millisecond // when its reply comes
		wait     = 100 * time.Millisecond // the waiter's deadline
	)
	for _, tc := range []struct {
		name    string
		late    bool          // the first request outlives its deadline before the waiter comes
		idle    bool          // the pool has an idle connection
		waitFor time.Duration // the waiter's deadline, from when it comes at deadline
		want    time.Duration // how long Wait takes
		wantErr error
	}{
		{"no request late", false, false, wait, 0, nil},
		{"idle connection", true, true, wait, 0, nil},
		{"late request ends first", true, false, 4 * wait, reply - deadline, nil},
		{"waiter's deadline first", true, false, wait, wait, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l Late
				life := reply
				if !tc.late {
					life = deadline / 2
				}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				end := l.Begin(ctx)
				go func() {
					time.Sleep(life) // the request's reply
					end()
				}()
				time.Sleep(deadline)
				synctest.Wait()
				wctx, wcancel := context.WithTimeout(context.Background(), tc.waitFor)
				defer wcancel()
				start := time.Now()
				err := l.Wait(wctx, func() bool { return !tc.idle })
				if got := time.Since(start); got != tc.want || err != tc.wantErr {
					t.Errorf("Wait = %v after %v; want %v after %v", err, got, tc.wantErr, tc.want)
				}
				time.Sleep(reply)
				l.mu.Lock()
				n := len(l.reqs)
				l.mu.Unlock()
				if n != 0 {
					t.Errorf("%d requests still counted late after every one ended; want 0", n)
				}
			})
		})
	}
}

// TestLateSlow checks on virtual time that a node is slow from a request
// that ran past its deadline, late or timed out on the caller's goroutine,
// for SlowWindow, and not before.
func TestLateSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Late
		if l.Slow() {
			t.Fatal("Slow before any request = true; want false")
		}
		l.TimedOut()
		time.Sleep(SlowWindow - time.Nanosecond)
		if !l.Slow() {
			t.Errorf("Slow just before SlowWindow after TimedOut = false; want true")
		}
		time.Sleep(time.Nanosecond)
		if l.Slow() {
			t.Errorf("Slow SlowWindow after TimedOut = true; want false")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		end := l.Begin(ctx)
		time.Sleep(time.Second)
		synctest.Wait()
		end()
		if !l.Slow() {
			t.Errorf("Slow after a request outlived its deadline = false; want true")
		}
	})
}
