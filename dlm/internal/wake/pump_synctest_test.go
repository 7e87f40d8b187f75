//go:build go1.25

// wait_synctest_test.go explains the build constraint, and holds the
// package's go:debug line.

package wake

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestConfirmationOnlyAnswers checks, on synctest's fake clock, which
// confirmations of a subscription wake a waiter: the node's answer to a
// SUBSCRIBE of a subscription made again after a failure does, once; the
// same confirmation repeated, or one of a channel the pump never asked for,
// does not, whatever the node sends. (Each woke every watcher of the
// channel, and a node repeating them every 2 ms drove a waiter into an
// attempt every few milliseconds.)
func TestConfirmationOnlyAnswers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		node := &confirmingNode{}
		var wg sync.WaitGroup
		w := New(testManager, []driver.Node{node}, func(f func()) { wg.Go(f) }, time.Second, nil)
		defer wg.Wait()
		defer w.Close()
		ch := script.ManagerChannel("k", testManager)
		wt := w.Watch([]string{"k"}, testWaiter, 1)
		defer wt.Stop()
		wt.Ready(context.Background(), time.Second)
		synctest.Wait()
		woken := func() bool {
			_, _, resub := wt.named()
			return resub
		}
		if woken() {
			t.Fatal("the first confirmation woke the waiter; want it to wake nobody")
		}
		repeat := func(channel string) {
			for range 100 {
				node.confirm(channel)
				time.Sleep(2 * time.Millisecond)
			}
		}
		repeat(ch)
		repeat(script.ManagerChannel("other", testManager))
		if woken() {
			t.Error("confirmations the pump did not ask for woke the waiter; want them ignored")
		}
		node.cut() // the pump opens a new subscription, which asks again
		time.Sleep(MaxReopen)
		synctest.Wait()
		if !woken() {
			t.Fatal("the confirmation of the subscription made again did not wake the waiter")
		}
		wt.Drain()
		repeat(ch)
		if woken() {
			t.Error("the confirmation of the subscription made again, repeated, woke the waiter again")
		}
		if got := node.subscribes(); got != 2 {
			t.Errorf("the pump sent %d SUBSCRIBEs; want 2, one per subscription", got)
		}
	})
}

// confirmingNode is a node whose subscriptions confirm every SUBSCRIBE at
// once, and on which the test confirms what it likes (a hostile node) or
// cuts the connection.
type confirmingNode struct {
	mu   sync.Mutex
	sub  *confirmingSub
	sent int // SUBSCRIBEs
}

func (n *confirmingNode) Eval(context.Context, *driver.Script, []string, []string) (any, error) {
	return nil, errors.New("not a lock node")
}
func (n *confirmingNode) Addr() string { return "confirming" }
func (n *confirmingNode) Close() error { return nil }

func (n *confirmingNode) Subscribe(_ context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sub = &confirmingSub{n: n, h: h, done: make(chan struct{})}
	return n.sub, nil
}

// confirm sends a confirmation of channel on the current subscription.
func (n *confirmingNode) confirm(channel string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sub.h.Subscribed(channel)
}

// cut ends the current subscription, as a lost connection does.
func (n *confirmingNode) cut() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sub.Close()
}

func (n *confirmingNode) subscribes() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sent
}

type confirmingSub struct {
	n    *confirmingNode
	h    driver.PubSubHandler
	once sync.Once
	done chan struct{}
}

func (s *confirmingSub) Subscribe(_ context.Context, channels ...string) error {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	s.n.sent++
	for _, ch := range channels {
		s.h.Subscribed(ch)
	}
	return nil
}

func (s *confirmingSub) Unsubscribe(context.Context, ...string) error { return nil }
func (s *confirmingSub) Done() <-chan struct{}                        { return s.done }
func (s *confirmingSub) Close() error {
	s.once.Do(func() { close(s.done) })
	return nil
}
