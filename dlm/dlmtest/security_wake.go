package dlmtest

import (
	"context"
	"fmt"
	"github.com/dlmgo/redlock/dlm/redistest"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/resp"
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
	done := make(chan waitResult, 1)
	go func() {
		l, err := waiters.Lock(ctx, "wake")
		done <- waitResult{l, err, time.Now()}
	}()
	for deadline := time.Now().Add(s.patience()); w.attempts.Load() < 2 || subscriber && !s.listening(t, "wake"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v the waiter made %d attempts and subscribed everywhere = %v; want 2 and true", s.patience(), w.attempts.Load(), s.listening(t, "wake"))
		}
	}
	s.releaseToWaiter(t, ctx, "wake", holder, done, w, backoff, subscriber)
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
	ctx, cancel := context.WithTimeout(context.Background(), max(30*time.Second, 3*s.patience()))
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
	for deadline := time.Now().Add(s.patience()); w.attempts.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiter made %d attempts in %v; want 2", w.attempts.Load(), s.patience())
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
	// Every node announces the release: it names the waiter it hands the
	// key to.
	s.awaitDenial(t, s.servers[0], quietUser, "command publish")
	if s.subscriber(t) {
		for _, srv := range s.servers {
			s.awaitDenial(t, srv, quietUser, "command subscribe")
		}
	}
}

// listening reports whether every server has a subscriber to a wake
// channel of key: its broadcast channel or a manager's.
func (s *secure) listening(t *testing.T, key string) bool {
	t.Helper()
	for _, srv := range s.servers {
		if subscribersOf(t, srv, dlm.DefaultKeyPrefix+"{"+key+"}:wake*", false) == 0 {
			return false
		}
	}
	return true
}

// managerChannel returns the channel of key on which the releases name the
// waiters of the one manager that listens there.
func (s *secure) managerChannel(t *testing.T, key string) string {
	t.Helper()
	pattern := dlm.DefaultKeyPrefix + "{" + key + "}:wake:*"
	v, err := s.servers[0].Do("PUBSUB", "CHANNELS", pattern)
	if err != nil {
		t.Fatalf("PUBSUB CHANNELS on %s: %v", s.servers[0].Addr(), err)
	}
	if chans, _ := v.([]any); len(chans) == 1 {
		ch, _ := chans[0].(string)
		return ch
	}
	t.Fatalf("PUBSUB CHANNELS %s = %v; want one manager's channel", pattern, v)
	return ""
}

// Payloads a client with [LeastPrivilegeRules] may publish on a wake
// channel.
var (
	// overflowingCounts are broadcast releases whose counts, times an
	// attempt's duration, overflow: for 2^59+2, to a product that is not
	// positive for about half of all attempts. On a manager's channel, which
	// carries waiters' ids alone, they are malformed.
	overflowingCounts = []string{"r" + strings.Repeat("9", 18), "r922337203685477580", "r576460752303423490"}
	// malformedWakes are negative and malformed counts, a count too long to
	// be one, bytes that are not ASCII, garbage of a fair waiter id's
	// length and a long payload. Waiters ignore them, and log each at debug
	// level.
	malformedWakes = []string{
		"r-9223372036854775808", "r-1", "r", "r" + strings.Repeat("9", 40), "r\u0661\u0662", "\xff\xfe\xfd",
		"not a waiter's id!!!!!", strings.Repeat("x", 1<<16),
	}
)

// malformedLog is the message of the debug record of an ignored wake
// message.
const malformedLog = "malformed wake message ignored"

// testHostilePublish publishes hostile payloads, as a user with
// [LeastPrivilegeRules], on the channel where the releases name the waiters
// of a manager that waits for a key: releases with overflowing counts,
// grants, negative and malformed counts, another manager's waiter's id,
// bytes that are not ASCII and a long payload, from every server. None is
// the id of a waiter of that manager: they must wake its waiter into no
// attempt, and be logged; and the waiter must get the lock once it is
// released — named by the release.
func (s *secure) testHostilePublish(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), max(30*time.Second, 3*s.patience()))
	defer cancel()
	subscriber := s.subscriber(t)
	if !subscriber {
		t.Skipf("%s nodes do not implement driver.Subscriber: waiters hear nothing published", s.driver)
	}
	m, _ := s.open(t, s.urls(lockerUser))
	defer m.Close()
	holder, err := m.TryLock(ctx, "hostile", dlm.WithTTL(time.Minute))
	if err != nil {
		s.sawErr(err)
		t.Fatalf("TryLock(hostile) = %v", err)
	}
	s.sawLock(holder)
	const backoff = time.Minute
	waiters, w := s.open(t, s.urls(lockerUser), dlm.WithRetry(0, dlm.FixedBackoff(backoff)))
	defer waiters.Close()
	done := make(chan waitResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- waitResult{err: fmt.Errorf("panic in Lock: %v", p), at: time.Now()}
			}
		}()
		l, err := waiters.Lock(ctx, "hostile")
		done <- waitResult{l, err, time.Now()}
	}()
	// await waits until ok reports true, failing t if Lock returns first.
	await := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(s.patience()); !ok(); time.Sleep(5 * time.Millisecond) {
			select {
			case r := <-done:
				s.sawErr(r.err)
				t.Fatalf("waiter's Lock(hostile) returned (%v) while the lock was held, after hostile wake messages", r.err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %v", what, s.patience())
			}
		}
	}
	await("waiter's first attempts, subscribed on every server", func() bool { return w.attempts.Load() >= 2 && s.listening(t, "hostile") })
	channel := s.managerChannel(t, "hostile")
	hostile := append(append([]string{"", "t", "r5", strings.Repeat("O", 11) + strings.Repeat("w", 11)}, overflowingCounts...), malformedWakes...)
	logged, tried := strings.Count(s.log.String(), malformedLog), w.attempts.Load()
	for _, srv := range s.servers {
		s.publish(t, srv, channel, hostile...)
	}
	want := logged + len(hostile)*len(s.servers)
	await(fmt.Sprintf("waiter logging %d malformed wake messages", want-logged), func() bool { return strings.Count(s.log.String(), malformedLog) >= want })
	if got := w.attempts.Load() - tried; got != 0 {
		t.Errorf("hostile wake messages woke the waiter into %d attempts; want none", got)
	}
	s.releaseToWaiter(t, ctx, "hostile", holder, done, w, backoff, true)
}

// waitResult is what a waiter's Lock returned, and when.
type waitResult struct {
	l   *dlm.Lock
	err error
	at  time.Time
}

// releaseToWaiter unlocks holder of key and checks that the waiter whose
// Lock reports on done, with w its manager's hook and backoff its fixed
// retry pace, gets the lock, and then unlocks it. With woken (the nodes
// implement [driver.Subscriber]), the waiter must get it before its next
// retry could come — half the backoff after its latest failed attempt
// began, as the backoff's jitter allows —, so by the release's wake-up.
func (s *secure) releaseToWaiter(t *testing.T, ctx context.Context, key string, holder *dlm.Lock, done <-chan waitResult, w *watch, backoff time.Duration, woken bool) {
	t.Helper()
	if err := holder.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("Unlock(%s) = %v", key, err)
	}
	r := <-done
	if r.err != nil {
		s.sawErr(r.err)
		t.Fatalf("waiter's Lock(%s) = %v; want the lock", key, r.err)
	}
	s.sawLock(r.l)
	if retry := time.Unix(0, w.lastFailed.Load()).Add(backoff / 2); woken && !r.at.Before(retry) {
		t.Errorf("the waiter got the lock %v after its earliest retry; want it woken by the release, before", r.at.Sub(retry))
	}
	if err := r.l.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("waiter's Unlock(%s) = %v", key, err)
	}
}

// publish sends each payload on channel of srv as a user with
// [LeastPrivilegeRules], over one connection, and fails t unless srv
// accepted every PUBLISH.
func (s *secure) publish(t *testing.T, srv *redistest.Server, channel string, payloads ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := resp.Dial(ctx, &driver.Config{Addr: srv.Addr(), Username: lockerUser, Password: secretOf(lockerUser), TLS: srv.TLSConfig()})
	if err != nil {
		t.Fatalf("connecting to %s as %s: %v", srv.Addr(), lockerUser, err)
	}
	defer c.Close()
	for _, p := range payloads {
		if _, err := c.Do(ctx, "PUBLISH", channel, p); err != nil {
			t.Fatalf("PUBLISH %s %.20q on %s as %s: %v", channel, p, srv.Addr(), lockerUser, err)
		}
	}
}
