package dlm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// queued returns how many of m's callers wait in line for key behind the
// one at its head, or -1 when none is at its head.
func queued(m *Manager, key string) int {
	m.waits.local.mu.Lock()
	defer m.waits.local.mu.Unlock()
	if q := m.waits.local.queues[key]; q != nil && q.busy {
		return len(q.waiters)
	}
	return -1
}

// TestLocalQueueOrder checks that a manager's callers waiting for one key
// get it in the order they arrived, each the moment the one before unlocks,
// and that while the lock is held elsewhere only the first of them sends
// requests to the nodes.
func TestLocalQueueOrder(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	m := newManager(t, fs, WithRetry(0, FixedBackoff(100*time.Millisecond)))
	ctx := context.Background()
	setUp(fs, "k", "HHHHH") // held by another process for now
	const waiters = 5
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := m.Lock(ctx, "k")
			if err != nil {
				t.Errorf("waiter %d: Lock = %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("waiter %d: Unlock = %v", i, err)
			}
		}()
		// The first competes; the others line up behind it, in order.
		waitFor(t, "the waiter in line", func() bool { return queued(m, rkey("k")) == i })
	}
	before := countAll(fs, "acquire")
	time.Sleep(300 * time.Millisecond) // the other process holds on; count the retries meanwhile
	retries := countAll(fs, "acquire") - before
	// One caller retrying every 50–100 ms makes at most 7 attempts of 5
	// requests in 300 ms; five callers would make five times as many.
	if retries > 8*5 {
		t.Errorf("%d acquire requests in 300ms with %d callers waiting; want those of one caller only (at most 40)", retries, waiters)
	}
	for _, f := range fs {
		f.set(rkey("k"), "other", time.Millisecond) // the other process's lock expires
	}
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("grants went to waiters %v; want the order they arrived in, 0 to %d", order, waiters-1)
		}
	}
	if n := len(m.waits.local.queues); n != 0 {
		t.Errorf("%d local queues left after every caller unlocked; want none", n)
	}
}

// TestLocalQueueHolderNeverUnlocks checks that a caller waiting behind a
// lock that is never unlocked gets its turn when that lock's validity ends.
func TestLocalQueueHolderNeverUnlocks(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	m := newManager(t, fs, WithTTL(200*time.Millisecond))
	ctx := context.Background()
	if _, err := m.Lock(ctx, "k"); err != nil { // and forgotten
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := m.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock behind a holder that never unlocks = %v; want the lock once its validity ended", err)
	}
	l.Unlock(ctx)
}

// TestLocalQueueLeaving checks that a caller whose context ends, or whose
// manager closes, leaves the line at once, and that the line goes on
// without it.
func TestLocalQueueLeaving(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	m := newManager(t, fs)
	ctx := context.Background()
	holder, err := m.Lock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := m.Lock(cctx, "k")
		gaveUp <- err
	}()
	waitFor(t, "the first waiter in line", func() bool { return queued(m, rkey("k")) == 1 })
	next := make(chan error, 1)
	go func() {
		l, err := m.Lock(ctx, "k")
		if err == nil {
			err = l.Unlock(ctx)
		}
		next <- err
	}()
	waitFor(t, "the second waiter in line", func() bool { return queued(m, rkey("k")) == 2 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("Lock of a waiter whose context was cancelled = %v; want context.Canceled", err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-next; err != nil {
		t.Errorf("Lock and Unlock of the waiter behind the one that left = %v; want nil", err)
	}

	holder, err = m.Lock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := m.Lock(ctx, "k")
		gaveUp <- err
	}()
	waitFor(t, "a waiter in line", func() bool { return queued(m, rkey("k")) == 1 })
	m.Close()
	if err := <-gaveUp; !errors.Is(err, ErrClosed) {
		t.Errorf("Lock of a waiter in line when the manager closed = %v; want ErrClosed", err)
	}
	holder.Unlock(ctx)
}

// TestTryLockSkipsLocalQueue checks that TryLock does not wait in line: it
// makes its one attempt at once.
func TestTryLockSkipsLocalQueue(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	m := newManager(t, fs)
	ctx := context.Background()
	holder, err := m.Lock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(ctx)
	if _, err := m.TryLock(ctx, "k"); !errors.Is(err, ErrNotObtained) {
		t.Errorf("TryLock of a key this manager holds = %v; want ErrNotObtained at once", err)
	}
}

// TestRetryBudgetOutOfLine checks that a Lock call with a retry budget
// stays out of the manager's line, as WithRetry's doc says: waiting behind a
// caller from the line, it competes on the nodes and is not handed the
// lock; holding the lock, its Unlock releases it on the nodes rather than
// handing it to the caller in line.
func TestRetryBudgetOutOfLine(t *testing.T) {
	t.Parallel()
	budget := WithRetry(1000, FixedBackoff(5*time.Millisecond))
	for _, tc := range []struct {
		name          string
		first, second []Option
	}{
		{"waiting with a budget", nil, []Option{budget}},
		{"holding with a budget", []Option{budget}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			fs := newFakes(3)
			m := newManager(t, fs, WithTTL(time.Minute))
			ctx := context.Background()
			first, err := m.Lock(ctx, "k", tc.first...)
			if err != nil {
				t.Fatal(err)
			}
			refused := countAll(fs, "acquire") + 3
			res := make(chan *Lock, 1)
			go func() {
				l, err := m.Lock(ctx, "k", tc.second...)
				if err != nil {
					t.Errorf("second Lock = %v", err)
				}
				res <- l
			}()
			waitFor(t, "the second call's attempt on the nodes", func() bool { return countAll(fs, "acquire") >= refused })
			if n := queued(m, rkey("k")); n > 0 {
				t.Errorf("%d callers wait in line behind the head; want none", n)
			}
			if err := first.Unlock(ctx); err != nil {
				t.Fatalf("Unlock = %v", err)
			}
			second := <-res
			if second == nil {
				t.FailNow()
			}
			if second.secret == first.secret {
				t.Error("the lock was handed over within the manager; want it obtained from the nodes")
			}
			if err := second.Unlock(ctx); err != nil {
				t.Errorf("second Unlock = %v", err)
			}
		})
	}
}

// TestLocalQueueWaitersBeforeGrant checks that callers who lined up while
// the head was still competing for the lock get their turn when its
// validity ends, even though the holder never unlocks.
func TestLocalQueueWaitersBeforeGrant(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	m := newManager(t, fs, WithTTL(200*time.Millisecond), WithRetry(0, FixedBackoff(20*time.Millisecond)))
	setUp(fs, "k", "HHH") // held elsewhere: the head competes, and waits
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first := make(chan *Lock, 1)
	go func() {
		l, err := m.Lock(ctx, "k")
		if err != nil {
			t.Errorf("first Lock = %v", err)
		}
		first <- l // and forgotten: never unlocked
	}()
	waitFor(t, "the head of the line", func() bool { return queued(m, rkey("k")) == 0 })
	second := make(chan error, 1)
	go func() {
		l, err := m.Lock(ctx, "k")
		if err == nil {
			l.Unlock(ctx)
		}
		second <- err
	}()
	waitFor(t, "the second caller in line", func() bool { return queued(m, rkey("k")) == 1 })
	for _, f := range fs {
		f.set(rkey("k"), "other", time.Millisecond) // the other holder's lock expires
	}
	if l := <-first; l == nil {
		t.Fatal("the head did not obtain the lock")
	}
	if err := <-second; err != nil {
		t.Errorf("Lock of a caller lined up before the head's grant, the head never unlocking = %v; want the lock when its validity ended", err)
	}
}
