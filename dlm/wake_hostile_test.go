package dlm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
)

// hostileWakes are payloads any client allowed to publish on a wake channel
// can send: counts whose product with an attempt's duration overflows,
// which are read and capped, then negative and malformed counts, a count
// too long to be one, garbage of a fair waiter id's length, bytes that are
// not ASCII and a long payload, which are ignored.
var hostileWakes = []struct {
	payload   string
	malformed bool
}{
	{"r" + strings.Repeat("9", 18), false},
	{"r922337203685477580", false},
	{"r-9223372036854775808", true},
	{"r-1", true},
	{"r", true},
	{"r+5", true},
	{"r0x10", true},
	{"r" + strings.Repeat("9", 40), true},
	{"r99999999999999999999", true},
	{"\xff\xfe\xfd", true},
	{"r\u0661\u0662", true},
	{"not a waiter's id!!!!!", true},
	{strings.Repeat("x", 1<<16), true},
}

// TestWakePublishCannotCrashWaiter publishes hostile payloads on the wake
// channel of a key a waiter waits for, on every node, as any client may.
// The waiter must neither panic nor give up, must count the malformed
// payloads, and must still be woken by the release.
func TestWakePublishCannotCrashWaiter(t *testing.T) {
	t.Parallel()
	srvs := dlmtest.StartServers(t, 3)
	holderM, waiterM := newWakeManager(t, srvs), newWakeManager(t, srvs)
	ctx := context.Background()
	const key = "hostile"
	held, err := holderM.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan lockResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				res <- lockResult{err: fmt.Errorf("Lock panicked: %v", p), at: time.Now()}
			}
		}()
		l, err := waiterM.Lock(ctx, key)
		res <- lockResult{l, err, time.Now()}
	}()
	awaitListening(t, srvs, key)
	before := dlm.WakeIgnored(waiterM)
	want := before
	for _, h := range hostileWakes {
		for _, s := range srvs {
			if _, err := s.Do("PUBLISH", "redlock:{"+key+"}:wake", h.payload); err != nil {
				t.Fatal(err)
			}
			if h.malformed {
				want++
			}
		}
	}
	// Every payload, malformed or not, was heard once the last malformed
	// one was counted: a waiter that panicked or gave up has returned.
	for deadline := time.Now().Add(slowRetry / 5); ; time.Sleep(2 * time.Millisecond) {
		select {
		case r := <-res:
			t.Fatalf("waiter's Lock returned (%v) while the lock was held, after hostile wake messages", r.err)
		default:
		}
		if dlm.WakeIgnored(waiterM) >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiter counted %d malformed wake messages after %v; want %d", dlm.WakeIgnored(waiterM)-before, slowRetry/5, want-before)
		}
	}
	select {
	case r := <-res:
		t.Fatalf("waiter's Lock returned (%v) while the lock was held, after hostile wake messages", r.err)
	default:
	}
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("waiter's Lock after hostile wake messages = %v; want the lock", r.err)
	}
	defer r.l.Unlock(ctx)
	if d := r.at.Sub(released); d > slowRetry/5 {
		t.Errorf("waiter obtained the lock %v after its release; want it woken by the release, long before its next retry (%v to %v)", d, slowRetry/2, slowRetry)
	}
}
