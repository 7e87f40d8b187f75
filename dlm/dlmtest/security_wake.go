package dlmtest

import (
	"context"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// checkWake makes a waiter of a second manager wait for a lock that m holds
// and checks that it gets it once m releases it. When the driver's nodes
// implement [driver.Subscriber], the waiter retries only every minute, so
// it must have been woken by the release's announcement.
func (s *secure) checkWake(ctx context.Context, t *testing.T, m *dlm.Manager) {
	t.Helper()
	subscriber := s.subscriber(t)
	t.Logf("%s nodes implement driver.Subscriber: %v", s.driver, subscriber)
	backoff := 50 * time.Millisecond
	if subscriber {
		backoff = time.Minute
	}
	holder, err := m.TryLock(ctx, "wake")
	if err != nil {
		s.sawErr(err)
		t.Fatalf("TryLock(wake) = %v", err)
	}
	s.sawLock(holder)
	waiters, w := s.open(t, s.urls(lockerUser), dlm.WithRetry(0, dlm.FixedBackoff(backoff)))
	defer waiters.Close()
	type result struct {
		l   *dlm.Lock
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		l, err := waiters.Lock(ctx, "wake")
		done <- result{l, err, time.Now()}
	}()
	for deadline := time.Now().Add(10 * time.Second); w.attempts.Load() < 2 || subscriber && !s.listening(t, "wake"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s the waiter made %d attempts and subscribed everywhere = %v; want 2 and true", w.attempts.Load(), s.listening(t, "wake"))
		}
	}
	released := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("Unlock(wake) = %v", err)
	}
	r := <-done
	if r.err != nil {
		s.sawErr(r.err)
		t.Fatalf("waiter's Lock(wake) = %v", r.err)
	}
	s.sawLock(r.l)
	if d := r.at.Sub(released); subscriber && d > 5*time.Second {
		t.Errorf("the waiter got the lock %v after its release; want it woken by the release, not its retry", d)
	}
	if err := r.l.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("waiter's Unlock(wake) = %v", err)
	}
}

// subscriber reports whether the driver's nodes implement
// [driver.Subscriber].
func (s *secure) subscriber(t *testing.T) bool {
	t.Helper()
	n, err := dlm.OpenNode(s.nodeURL(0, lockerUser, secretOf(lockerUser)))
	if err != nil {
		t.Fatalf("OpenNode: %v", err)
	}
	defer n.Close()
	_, ok := n.(driver.Subscriber)
	return ok
}

// testWithoutPubSub checks that the pub/sub rules serve only to wake
// waiters: without them a waiter gets the lock at its next retry after the
// release, and the servers record the PUBLISH they refused (and the
// SUBSCRIBE, for drivers that subscribe).
func (s *secure) testWithoutPubSub(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _ := s.open(t, s.urls(quietUser))
	defer m.Close()
	waiters, w := s.open(t, s.urls(quietUser), dlm.WithRetry(0, dlm.FixedBackoff(100*time.Millisecond)))
	defer waiters.Close()
	holder, err := m.TryLock(ctx, "quiet")
	if err != nil {
		s.sawErr(err)
		t.Fatalf("TryLock(quiet) as %s = %v", quietUser, err)
	}
	s.sawLock(holder)
	s.awaitKey(t, dlm.DefaultKeyPrefix+"{quiet}", true)
	done := make(chan error, 1)
	go func() {
		l, err := waiters.Lock(ctx, "quiet")
		if err == nil {
			s.sawLock(l)
			err = l.Unlock(ctx)
		}
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); w.attempts.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiter made %d attempts in 10s; want 2", w.attempts.Load())
		}
	}
	if err := holder.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("Unlock(quiet) as %s = %v", quietUser, err)
	}
	if err := <-done; err != nil {
		s.sawErr(err)
		t.Errorf("waiter's Lock(quiet), then Unlock as %s = %v", quietUser, err)
	}
	// The release is announced by two nodes, the first to grant the lock:
	// node 0 among them, since every node held it.
	s.awaitDenial(t, s.servers[0], quietUser, "command publish")
	if s.subscriber(t) {
		for _, srv := range s.servers {
			s.awaitDenial(t, srv, quietUser, "command subscribe")
		}
	}
}

// listening reports whether every server has a subscriber to the wake
// channel of key.
func (s *secure) listening(t *testing.T, key string) bool {
	t.Helper()
	for _, srv := range s.servers {
		v, err := srv.Do("PUBSUB", "NUMSUB", dlm.DefaultKeyPrefix+"{"+key+"}:wake")
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB on %s: %v", srv.Addr(), err)
		}
		if r, _ := v.([]any); len(r) != 2 || r[1] == int64(0) {
			return false
		}
	}
	return true
}
