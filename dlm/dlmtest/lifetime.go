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
// cancelled, with a cause wrapping ErrLockLost, as the manager reports the
// loss (EventLost); Do must return ErrLockLost; no one else may obtain the
// lock while fn's context is live; and once the nodes are back, the lock is
// free again.
//
// When the cancellation comes — before the lock's validity ends, and so
// before its keys can expire on the nodes — is proven on virtual time, where
// no scheduler can delay it: TestPausedMajorityCancelsDo in package dlm,
// with the same frozen majority and the same node timeout of a twentieth
// of the TTL. Here the margin is logged as a figure. The node timeout is
// that twentieth (of a 5 s TTL) stretched to the cluster's pace, and the
// TTL follows it at eight node timeouts, where that is more than 5 s.
func testPausedMajorityCancelsDo(t *testing.T, c *cluster) {
	timeout := c.pace.Stretch(250 * time.Millisecond)
	ttl := max(5*time.Second, 8*timeout)
	ctx := context.Background()
	var cancelled atomic.Int64 // UnixNano of the loss, when fn's ctx is cancelled
	lost := lostHook(func(e *dlm.Event) {
		if e.Key == "paused" {
			cancelled.CompareAndSwap(0, e.Start.UnixNano())
		}
	})
	opts := []dlm.Option{dlm.WithTTL(ttl), dlm.WithNodeTimeout(timeout), dlm.WithHook(lost)}
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
	at := time.Unix(0, cancelled.Load())
	t.Logf("fn's context cancelled %v before the end of validity, %v before the keys could expire (TTL %v, node timeout %v, pace %v)",
		until.Round(0).Sub(at).Round(time.Millisecond), start.Add(ttl).Round(0).Sub(at).Round(time.Millisecond), ttl.Round(time.Millisecond), timeout.Round(time.Millisecond), c.pace)
	// Once the nodes are back and the keys expired (the extensions the
	// frozen nodes queued may run when they resume, for another TTL), the
	// lock is free.
	lctx, cancel := context.WithTimeout(ctx, 2*ttl+c.patience())
	defer cancel()
	l, err := c.m.Lock(lctx, "paused", dlm.WithRetry(0, dlm.FixedBackoff(20*time.Millisecond)))
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
// succeed in. The node timeout is 250 ms stretched to the cluster's pace,
// and the TTL eight node timeouts, at least 2 s. A loss of the lock with
// no overlap says the extensions did not get through in time: a loaded
// machine or a broken extension. That is inconclusive, and the run is made
// again once with the TTL and the node timeout doubled; an overlap, or a
// second loss, fails the test.
func testDoOutlivesTTL(t *testing.T, c *cluster) {
	timeout := c.pace.Stretch(250 * time.Millisecond)
	const tries = 2
	for try := 1; ; try++ {
		ttl := max(2*time.Second, 8*timeout)
		lost, errs := doOutlivesTTL(c, ttl, timeout)
		for _, err := range errs {
			t.Error(err)
		}
		if !lost || len(errs) > 0 {
			return
		}
		if try == tries {
			t.Errorf("Do running 3×TTL lost the lock %d times (last with a %v TTL, a %v node timeout, pace %v); want the lock held throughout", tries, ttl, timeout, c.pace)
			return
		}
		t.Logf("inconclusive: Do running 3×TTL lost the lock with a %v TTL and a %v node timeout, no overlap; again with both doubled", ttl, timeout)
		timeout *= 2
	}
}

// doOutlivesTTL is one run of testDoOutlivesTTL: it reports whether the long
// job lost the lock, and every overlap or other failure it saw.
func doOutlivesTTL(c *cluster, ttl, timeout time.Duration) (lost bool, failures []error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var holders atomic.Int32
	enter := func() error {
		if h := holders.Add(1); h != 1 {
			return fmt.Errorf("%d holders at once", h)
		}
		return nil
	}
	opts := []dlm.Option{dlm.WithTTL(ttl), dlm.WithNodeTimeout(timeout)}
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
	if err != nil && !(lost && errors.Is(err, dlm.ErrLockLost)) {
		failures = append(failures, fmt.Errorf("the long job's Do running 3×TTL = %w; want the lock held throughout", err))
	}
	for err := range errs {
		failures = append(failures, err)
	}
	return lost, failures
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
	select {
	case <-running:
	case err := <-done:
		cancel()
		t.Fatalf("Do = %v before running its function; want the lock", err)
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(c.patience()):
		t.Fatalf("Do did not return %v after its context was cancelled", c.patience())
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
