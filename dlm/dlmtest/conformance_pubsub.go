package dlmtest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// testPubSub checks a node that implements [driver.Subscriber]: SUBSCRIBE
// confirmations and messages reach the handler, UNSUBSCRIBE takes effect,
// and Close ends the subscription, after which the handler hears nothing.
func testPubSub(t *testing.T, nt *nodeTester) {
	sub, ok := nt.node.(driver.Subscriber)
	if !ok {
		t.Logf("%T does not implement driver.Subscriber; nothing to check", nt.node)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	rec := &pubsubRecorder{}
	s, err := sub.Subscribe(ctx, rec)
	if err != nil {
		t.Fatalf("Subscribe = %v; want a subscription", err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	a, b := nt.prefix+"chan-a", nt.prefix+"chan-b"
	if err := s.Subscribe(ctx, a, b); err != nil {
		t.Fatalf("Subscription.Subscribe(%q, %q) = %v; want nil", a, b, err)
	}
	for _, ch := range []string{a, b} {
		if !rec.await(t, &rec.subscribed, ch) {
			t.Fatalf("no Subscribed(%q) within %v of Subscribe", ch, evalTimeout)
		}
	}
	publish := func(ch string) int64 {
		t.Helper()
		n, _ := nt.mustEval(t, `return redis.call('PUBLISH', ARGV[1], ARGV[2])`, nil, []string{ch, "payload of " + ch}).(int64)
		return n
	}
	if n := publish(a); n != 1 {
		t.Errorf("PUBLISH %s reached %d subscribers; want 1", a, n)
	}
	if !rec.await(t, &rec.messages, a+" payload of "+a) {
		t.Fatalf("no Message(%q) within %v of a PUBLISH", a, evalTimeout)
	}
	if err := s.Unsubscribe(ctx, a); err != nil {
		t.Fatalf("Subscription.Unsubscribe(%q) = %v; want nil", a, err)
	}
	for deadline := time.Now().Add(evalTimeout); publish(a) != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("PUBLISH %s still reaches the subscription %v after Unsubscribe", a, evalTimeout)
		}
	}
	publish(b)
	if !rec.await(t, &rec.messages, b+" payload of "+b) {
		t.Fatalf("no Message(%q) after unsubscribing from %q", b, a)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Subscription.Close() = %v; want nil", err)
	}
	closed = true
	select {
	case <-s.Done():
	case <-time.After(evalTimeout):
		t.Fatalf("Done() not closed %v after Close", evalTimeout)
	}
	heard := rec.count()
	publish(b)
	nt.checkUsable(t, "closing a subscription")
	if rec.count() != heard {
		t.Errorf("the handler heard a message after Close")
	}
}

// pubsubRecorder is a [driver.PubSubHandler] that records what it hears.
type pubsubRecorder struct {
	mu         sync.Mutex
	messages   []string
	subscribed []string
}

func (r *pubsubRecorder) Message(channel, payload string) {
	r.mu.Lock()
	r.messages = append(r.messages, channel+" "+payload)
	r.mu.Unlock()
}

func (r *pubsubRecorder) Subscribed(channel string) {
	r.mu.Lock()
	r.subscribed = append(r.subscribed, channel)
	r.mu.Unlock()
}

func (r *pubsubRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.messages) + len(r.subscribed)
}

// await waits up to evalTimeout for channel to appear in *list.
func (r *pubsubRecorder) await(t *testing.T, list *[]string, channel string) bool {
	t.Helper()
	for deadline := time.Now().Add(evalTimeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		r.mu.Lock()
		found := slices.Contains(*list, channel)
		r.mu.Unlock()
		if found {
			return true
		}
	}
	return false
}
