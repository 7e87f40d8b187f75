//go:build go1.25

// The waiting and hold times events carry, on testing/synctest's fake
// clock over fake nodes. synctest_test.go explains the build constraint
// and the go:debug line.

package dlm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestWaitingAndHeldEvents checks the events a hook counts waiters and
// hold times with: a Lock call sends EventWaiting when it begins and its
// EventObtained or EventNotObtained has Waited, TryLock sends neither;
// EventReleased has Held, the time from the lock's return to Unlock, and
// EventLost the time to the loss.
func TestWaitingAndHeldEvents(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl = time.Second
		fs := newFakes(3)
		h := &recordingHook{}
		m := newManager(t, fs, WithTTL(ttl), WithNodeTimeout(10*time.Millisecond), WithHook(h))
		ctx := context.Background()
		l, err := m.Lock(ctx, "k")
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		l.Unlock(ctx)
		tl, err := m.TryLock(ctx, "t")
		if err != nil {
			t.Fatalf("TryLock: %v", err)
		}
		// Not extended, it is lost a guard interval before its validity
		// ends.
		<-tl.Lost()
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		other := newManager(t, fs, WithTTL(ttl))
		held, _ := other.TryLock(ctx, "busy", WithAutoExtend(AutoExtend{}))
		_, err = m.Lock(tctx, "busy")
		cancel()
		held.Unlock(ctx)
		if !errors.Is(err, ErrNotObtained) {
			t.Fatalf("Lock(busy) = %v; want ErrNotObtained", err)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		var kinds []string
		for _, e := range h.events {
			if e.Kind == EventAttempt || e.Kind == EventNodeError {
				continue
			}
			kinds = append(kinds, e.Kind.String()+"/"+e.Key)
			switch {
			case e.Kind == EventObtained && e.Key == "k", e.Kind == EventNotObtained && e.Key == "busy":
				if !e.Waited {
					t.Errorf("%v event of Lock(%s) = %+v; want Waited", e.Kind, e.Key, e)
				}
			case e.Kind == EventObtained && e.Key == "t":
				if e.Waited {
					t.Errorf("obtained event of TryLock = %+v; want Waited false", e)
				}
			case e.Kind == EventReleased && e.Key == "k":
				if e.Held != 300*time.Millisecond {
					t.Errorf("released event Held = %v; want 300ms", e.Held)
				}
			case e.Kind == EventLost && e.Key == "t":
				if e.Held <= 0 || e.Held >= ttl {
					t.Errorf("lost event Held = %v; want the time to the loss, below the TTL", e.Held)
				}
			}
		}
		want := "[waiting/k obtained/k released/k obtained/t lost/t waiting/busy not_obtained/busy]"
		if got := fmt.Sprint(kinds); got != want {
			t.Errorf("events = %s; want %s", got, want)
		}
	})
}
