package dlmtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// testPausedMajorityCancelsDo freezes a majority of the nodes while Do's fn
// runs: extensions can no longer reach a quorum, so fn's context must be
// cancelled before the lock's validity ends, and no one else may obtain the
// lock while fn's context is live.
//
// The margins come from the TTL: the cancellation is due a loss guard (a
// twentieth of the validity, at most the node timeout) before the validity
// ends, and must get through the scheduler within it. The 50 ms guard of a
// 1 s TTL was overrun by 96 ms under -race with a busy loop on every core
// (make test-load); a 5 s TTL and a 250 ms node timeout give 247 ms. The
// moment of the cancellation is the EventLost that the manager sends as it
// cancels fn's context, not a later goroutine's reading of the clock.
func testPausedMajorityCancelsDo(t *testing.T, c *cluster) {
	const ttl = 5 * time.Second
	ctx := context.Background()
	var cancelled atomic.Int64 // UnixNano of the loss, when fn's ctx is cancelled
	lost := lostHook(func(e *dlm.Event) {
		if e.Key == "paused" {
			cancelled.CompareAndSwap(0, e.Start.UnixNano())
		}
	})
	opts := []dlm.Option{dlm.WithTTL(ttl), dlm.WithNodeTimeout(ttl / 20), dlm.WithHook(lost)}
	var until time.Time
	start := time.Now()
	err := c.m.Do(ctx, "paused", func(fctx context.Context) error {
		for i := 0; i < c.quorum(); i++ {
			c.servers[i].Pause()
		}
		// A rival tries while the holder's context is live; with a
		// majority frozen it must not succeed.
		if _, err := c.m.TryLock(ctx, "paused", opts...); err == nil {
			t.Error("a second holder obtained the lock while the first one's context was live")
		}
		<-fctx.Done()
		until = dlm.LockFromContext(fctx).Until()
		if cause := context.Cause(fctx); !errors.Is(cause, dlm.ErrLockLost) {
			t.Errorf("context.Cause(fn's ctx) = %v; want ErrLockLost", cause)
		}
		return nil
	}, opts...)
	for i := 0; i < c.quorum(); i++ {
		c.servers[i].Resume()
	}
	if !errors.Is(err, dlm.ErrLockLost) {
		t.Fatalf("Do with a majority frozen = %v; want ErrLockLost", err)
	}
	if cancelled.Load() == 0 {
		t.Fatal("Do's fn was cancelled with no EventLost")
	}
	// Compare wall clock readings: both sides come from this process.
	at := time.Unix(0, cancelled.Load())
	if !at.Before(until) {
		t.Errorf("fn's context cancelled %v after the validity ended; want before", at.Sub(until.Round(0)))
	}
	// The nodes' keys expire ttl after the acquire began at the earliest.
	if serverExpiry := start.Add(ttl).Round(0); !at.Before(serverExpiry) {
		t.Errorf("fn's context cancelled %v after the keys could expire on the nodes", at.Sub(serverExpiry))
	}
	t.Logf("fn's context cancelled %v before the end of validity", until.Round(0).Sub(at))
	// Once the nodes are back and the keys expired, the lock is free.
	l, err := c.m.Lock(ctx, "paused", dlm.WithRetry(0, dlm.FixedBackoff(20*time.Millisecond)))
	if err != nil {
		t.Fatalf("Lock after the frozen holder's loss: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// lostHook is a [dlm.Hook] that passes the EventLost events to f.
type lostHook func(e *dlm.Event)

func (h lostHook) OnEvent(_ context.Context, e *dlm.Event) {
	if e.Kind == dlm.EventLost {
		h(e)
	}
}

// testDoOutlivesTTL runs fn for three times the TTL under Do while 16
// goroutines compete for the same lock: the lock must be held throughout
// and no two holders may overlap.
//
// Each extension has a third of the TTL and several node timeouts to
// succeed in: a 500 ms TTL with 100 ms node timeouts ran out under -race
// with a busy loop on every core (make test-load), so the TTL is 2 s and
// the node timeout an eighth of it.
func testDoOutlivesTTL(t *testing.T, c *cluster) {
	const ttl = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var holders atomic.Int32
	enter := func() error {
		if h := holders.Add(1); h != 1 {
			return fmt.Errorf("%d holders at once", h)
		}
		return nil
	}
	opts := []dlm.Option{dlm.WithTTL(ttl), dlm.WithNodeTimeout(ttl / 8)}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var rivalGrants atomic.Int32
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				err := c.m.Do(ctx, "long", func(context.Context) error {
					defer holders.Add(-1)
					rivalGrants.Add(1)
					return enter()
				}, append(opts, dlm.WithRetry(0, dlm.FixedBackoff(50*time.Millisecond)))...)
				if err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
		}()
	}
	var lost bool
	err := c.m.Do(ctx, "long", func(fctx context.Context) error {
		defer holders.Add(-1)
		if err := enter(); err != nil {
			return err
		}
		grantsBefore := rivalGrants.Load()
		select {
		case <-time.After(3 * ttl):
		case <-fctx.Done():
			lost = true
		}
		if n := rivalGrants.Load() - grantsBefore; n != 0 {
			return fmt.Errorf("%d rival grants while the long job held the lock", n)
		}
		return nil
	}, append(opts, dlm.WithRetry(0, dlm.FixedBackoff(10*time.Millisecond)))...)
	cancel()
	wg.Wait()
	close(errs)
	if err != nil || lost {
		t.Errorf("Do running 3×TTL = %v (context cancelled: %v); want the lock held throughout", err, lost)
	}
	for err := range errs {
		t.Error(err)
	}
}

// testCallerCancelReleases cancels the caller's context while fn runs: fn's
// context ends, extension stops, and the lock is released at once.
func testCallerCancelReleases(t *testing.T, c *cluster) {
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- c.m.Do(ctx, "cancelled", func(fctx context.Context) error {
			close(running)
			<-fctx.Done()
			return fctx.Err()
		}, dlm.WithTTL(5*time.Second))
	}()
	<-running
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Do did not return after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Do after cancel = %v; want context.Canceled, not ErrLockLost", err)
	}
	for i := range c.servers {
		if v := c.value(t, i, "cancelled"); v != nil {
			t.Errorf("node %d still holds the lock after Do returned", i)
		}
	}
	// A waiting Lock stops waiting on cancel, too.
	holder, err := c.m.TryLock(context.Background(), "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(context.Background())
	wctx, wcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer wcancel()
	if _, err := c.m.Lock(wctx, "cancelled"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting Lock after its deadline = %v; want context.DeadlineExceeded", err)
	}
}
