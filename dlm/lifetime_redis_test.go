package dlm_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// The lock's lifetime against real redis-server processes: validity after a
// failed extension, Do and panics, extension that outlives Lock's context,
// and a lock after Unlock.

// redisManager returns a Manager over srvs, closed when the test ends. Its
// node timeout is the one derived from the default TTL stretched to the pace
// measured on the run ([pacedNodeTimeout]), unless opts set one.
func redisManager(t *testing.T, srvs []*redistest.Server, opts ...dlm.ManagerOption) *dlm.Manager {
	t.Helper()
	nodes := make([]driver.Node, len(srvs))
	for i, s := range srvs {
		nodes[i] = respNode(t, s.Addr(), "")
	}
	nt := pacedNodeTimeout(t, srvs[0], derivedNodeTimeout)
	m, err := dlm.New(nodes, append([]dlm.ManagerOption{dlm.WithNodeTimeout(nt)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// pttl returns the TTL s has for lock key, in ms: -2 when it is absent.
func pttl(t *testing.T, s *redistest.Server, key string) int64 {
	t.Helper()
	v, err := s.Do("PTTL", "redlock:{"+key+"}")
	if err != nil {
		t.Fatal(err)
	}
	return v.(int64)
}

func closedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestFailedExtendShortensValidityRedis checks, on real nodes, that an
// extension with a TTL shorter than the validity left, which fails because
// two of three nodes are frozen but which they apply once they run again,
// shortens Until and closes Lost before a rival can obtain the lock: there
// are never two holders.
func TestFailedExtendShortensValidityRedis(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	// A node timeout well above a loaded machine's stalls under -race, so
	// that every node runs the grant and the first extension.
	const timeout = 500 * time.Millisecond
	m := redisManager(t, srvs, dlm.WithTTL(30*time.Second), dlm.WithNodeTimeout(timeout))
	ctx := context.Background()
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// The grant's request to the slowest node may still be under way when
	// TryLock returns; an extension that overtook it would find no key there.
	for i, s := range srvs {
		waitCond(t, "node "+strconv.Itoa(i)+" to run the grant", func() bool { return pttl(t, s, "k") > 0 })
	}
	// Load the extend script on every node, so that the frozen ones run the
	// EVALSHA queued in their socket rather than answer NOSCRIPT to it.
	if err := l.Extend(ctx, 40*time.Second); err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		waitCond(t, "node "+strconv.Itoa(i)+" to run the first extension", func() bool { return pttl(t, s, "k") > 31000 })
	}
	lost := l.Lost()
	srvs[1].Pause()
	srvs[2].Pause()
	const short = 3 * time.Second
	start := time.Now()
	err = l.Extend(ctx, short)
	srvs[1].Resume()
	srvs[2].Resume()
	if !errors.Is(err, dlm.ErrUnavailable) {
		t.Fatalf("Extend(%v) with 2 of 3 nodes frozen = %v; want ErrUnavailable", short, err)
	}
	// The frozen nodes run the request queued in their socket when they
	// resume: every node now expires the key within short.
	for i, s := range srvs {
		waitCond(t, "node "+strconv.Itoa(i)+" to apply the extension", func() bool {
			ms := pttl(t, s, "k")
			return ms > 0 && ms <= short.Milliseconds()
		})
	}
	if got, want := l.Until(), start.Add(short); got.After(want) {
		t.Errorf("Until() after the failed Extend(%v) = start+%v; want at most start+%v, when the nodes let go", short, got.Sub(start), short)
	}
	rival := redisManager(t, srvs, dlm.WithRetry(0, dlm.FixedBackoff(20*time.Millisecond)))
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := rival.Lock(rctx, "k")
	if err != nil {
		t.Fatalf("rival Lock = %v; want the lock once the shortened TTL ran out", err)
	}
	defer r.Unlock(ctx)
	if !closedChan(lost) {
		t.Errorf("a rival obtained the lock %v after the failed Extend while the first holder's Lost() was still open (Until now%+v): two holders",
			time.Since(start).Round(time.Millisecond), time.Until(l.Until()).Round(time.Millisecond))
	}
}

// waitCond waits for cond, for a bound stretched to the machine's pace
// (see waitUntil).
func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, what, cond)
}

// TestDoReleasesOnPanic checks that when fn panics, Do releases the lock on
// the nodes and stops its extension before the panic goes on, so that a
// recovered panic higher up does not leave the lock held.
func TestDoReleasesOnPanic(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	m := redisManager(t, srvs, dlm.WithTTL(5*time.Second))
	ctx := context.Background()
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		m.Do(ctx, "k", func(context.Context) error { panic("boom") })
	}()
	if recovered != "boom" {
		t.Fatalf("recovered %v from Do; want fn's panic %q", recovered, "boom")
	}
	for i, s := range srvs {
		if ms := pttl(t, s, "k"); ms != -2 {
			t.Errorf("node %d holds the lock (PTTL %dms) after fn panicked; want it released", i, ms)
		}
	}
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock after Do's fn panicked = %v; want the lock", err)
	}
	l.Unlock(ctx)
}

// TestAutoExtendOutlivesLockContext checks that the context given to Lock
// bounds only the wait: cancelled right after Lock returns, auto-extension
// goes on until Unlock. Do keeps its own contract: cancelling its context
// cancels fn and releases the lock once fn returns.
func TestAutoExtendOutlivesLockContext(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	// Node timeouts well above a loaded machine's stalls under -race:
	// 200ms stretched to the pace measured on the run, and a TTL of five.
	nt := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
	ttl := 5 * nt
	m := redisManager(t, srvs, dlm.WithTTL(ttl), dlm.WithNodeTimeout(nt))
	ctx, cancel := context.WithTimeout(context.Background(), 5*ttl)
	l, err := m.Lock(ctx, "leader", dlm.WithAutoExtend(dlm.AutoExtend{}))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	if closedChan(l.Lost()) || !l.Until().After(time.Now()) {
		t.Fatalf("3×TTL after Lock's context was cancelled: Lost closed %v, Until now%+v; want the lock still extended",
			closedChan(l.Lost()), time.Until(l.Until()))
	}
	// Lock's cancelled context may have cut short the grant's request to
	// the slowest node: a quorum holds the key.
	held := 0
	for _, s := range srvs {
		if pttl(t, s, "leader") > 0 {
			held++
		}
	}
	if held < 2 {
		t.Errorf("%d of 3 nodes hold the key 3×TTL after Lock; want a quorum, extended", held)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock() = %v; want nil", err)
	}

	dctx, dcancel := context.WithCancel(context.Background())
	var fnErr error
	err = m.Do(dctx, "job", func(ctx context.Context) error {
		dcancel()
		<-ctx.Done()
		fnErr = ctx.Err()
		return nil
	})
	if err != nil || !errors.Is(fnErr, context.Canceled) {
		t.Errorf("Do with its context cancelled: fn's ctx ended with %v, Do = %v; want context.Canceled and nil", fnErr, err)
	}
	for i, s := range srvs {
		if ms := pttl(t, s, "job"); ms != -2 {
			t.Errorf("node %d holds Do's lock (PTTL %dms) after Do returned; want it released", i, ms)
		}
	}
}

// TestUnlockedLockRefusesHandle checks a lock after Unlock: Until is in the
// past, its Handle does not resume, and a second Unlock (or an Extend) says
// ErrNotHeld, not ErrLockLost.
func TestUnlockedLockRefusesHandle(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	m := redisManager(t, srvs)
	ctx := context.Background()
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.Until(); got.After(time.Now()) {
		t.Errorf("Until() after Unlock = now+%v; want it in the past", time.Until(got))
	}
	h := l.Handle()
	if h.Until.After(time.Now()) {
		t.Errorf("Handle().Until after Unlock = now+%v; want it in the past", time.Until(h.Until))
	}
	if r, err := m.Resume(ctx, h); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Resume(Handle of an unlocked lock) = %v, %v; want ErrLockLost", r, err)
	}
	for name, f := range map[string]func() error{
		"Unlock": func() error { return l.Unlock(ctx) },
		"Extend": func() error { return l.Extend(ctx, time.Second) },
	} {
		if err := f(); !errors.Is(err, dlm.ErrNotHeld) || errors.Is(err, dlm.ErrLockLost) {
			t.Errorf("%s() after Unlock = %v; want ErrNotHeld, not ErrLockLost", name, err)
		}
	}
}
