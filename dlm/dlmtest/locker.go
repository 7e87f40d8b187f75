package dlmtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// TestLocker runs the suite of a [dlm.Locker]'s semantics against the
// lockers open returns: contention and its errors, waiting and its context,
// expiry, extension, Do, and bad input. Each subtest gets a fresh locker
// from open and uses keys of its own; the subtests
// run in parallel, so open must be safe to call from several goroutines. It runs against a manager on real
// redis-servers and against package memlock's in-memory manager, so that
// users' tests written against memlock behave as production does. Timings
// are generous: it is meant to pass on a loaded machine.
func TestLocker(t *testing.T, open func(t *testing.T) dlm.Locker) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, lk dlm.Locker, key string)
	}{
		{"TryLockContention", testTryLockContention},
		{"UnlockTwice", testUnlockTwice},
		{"LockWaitsForRelease", testLockWaitsForRelease},
		{"LockContextEnds", testLockContextEnds},
		{"Expiry", testExpiry},
		{"ExtendKeeps", testExtendKeeps},
		{"DoHoldsAndReleases", testDoHoldsAndReleases},
		{"DoOutlivesTTL", testLockerDoOutlivesTTL},
		{"DoCancel", testDoCancel},
		{"BadInput", testLockerBadInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t), "locker-"+strings.ToLower(tc.name))
		})
	}
}

// lockerTTL is the TTL of the suite's short-lived locks: long enough that
// the extensions of a loaded machine are in time, and above the node
// timeout of a locker that stretches it to a loaded machine's pace (the
// backends' lockers cap it at half this TTL).
const lockerTTL = 2 * time.Second

func mustTryLock(t *testing.T, lk dlm.Locker, key string, opts ...dlm.Option) *dlm.Lock {
	t.Helper()
	l, err := lk.TryLock(context.Background(), key, opts...)
	if err != nil {
		t.Fatalf("TryLock(%q) = %v; want the lock", key, err)
	}
	return l
}

func testTryLockContention(t *testing.T, lk dlm.Locker, key string) {
	l := mustTryLock(t, lk, key)
	if _, err := lk.TryLock(context.Background(), key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryLock(%q) while held = %v; want ErrNotObtained", key, err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	mustTryLock(t, lk, key).Unlock(context.Background())
}

func testUnlockTwice(t *testing.T, lk dlm.Locker, key string) {
	l := mustTryLock(t, lk, key)
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	if err := l.Unlock(context.Background()); !errors.Is(err, dlm.ErrNotHeld) || errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("second Unlock = %v; want ErrNotHeld, not ErrLockLost", err)
	}
	if err := l.Extend(context.Background(), time.Second); !errors.Is(err, dlm.ErrNotHeld) {
		t.Errorf("Extend after Unlock = %v; want ErrNotHeld", err)
	}
}

func testLockWaitsForRelease(t *testing.T, lk dlm.Locker, key string) {
	l := mustTryLock(t, lk, key)
	err := obtainedAfterRelease(t, "the first holder", l, func(ctx context.Context) (*dlm.Lock, error) {
		return lk.Lock(ctx, key)
	})
	if err != nil {
		t.Errorf("Lock(%q) waiting for the release: %v", key, err)
	}
}

// obtainedAfterRelease calls take on a goroutine while holder holds the
// lock, releases holder after a pause, and returns take's error, or an
// error if take obtained the lock before holder released it. What take
// obtained is released.
func obtainedAfterRelease(t *testing.T, what string, holder *dlm.Lock, take func(ctx context.Context) (*dlm.Lock, error)) error {
	t.Helper()
	released := make(chan time.Time, 1)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		l, err := take(ctx)
		if err == nil {
			select {
			case at := <-released:
				if time.Now().Before(at) {
					err = errors.New("obtained before the release")
				}
			default:
				err = fmt.Errorf("obtained while %s held it", what)
			}
			l.Unlock(context.Background())
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // lets take's first attempt fail, if it is quick
	released <- time.Now()
	unlock(t, what, holder)
	return <-got
}

func testLockContextEnds(t *testing.T, lk dlm.Locker, key string) {
	l := mustTryLock(t, lk, key)
	defer l.Unlock(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := lk.Lock(ctx, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock(%q) while held, until a deadline = %v; want DeadlineExceeded", key, err)
	}
}

func testExpiry(t *testing.T, lk dlm.Locker, key string) {
	start := time.Now()
	l := mustTryLock(t, lk, key, dlm.WithTTL(lockerTTL))
	// The nodes that granted l set its keys before TryLock returned: by a
	// TTL after that, a quorum of them has let them expire. (A loaded
	// machine can apply a request well after start.)
	granted := time.Now()
	if until := l.Until(); !until.After(start) || until.After(start.Add(lockerTTL)) {
		t.Errorf("Until = %v after the start; want within the TTL %v", until.Sub(start), lockerTTL)
	}
	// Lost closes; that it closes before Until, a loss guard early, is
	// proven on virtual time (TestLostAtValidityEnd in package dlm,
	// TestFakeClock in package memlock), where no scheduler delays the
	// reading of the clock after it.
	select {
	case <-l.Lost():
	case <-time.After(lockerTTL + waitLimit):
		t.Fatalf("Lost still open %v after a TTL of %v without extension", lockerTTL+waitLimit, lockerTTL)
	}
	for !time.Now().After(granted.Add(lockerTTL + 10*time.Millisecond)) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Extend(context.Background(), lockerTTL); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Extend after expiry = %v; want ErrLockLost", err)
	}
	other := mustTryLock(t, lk, key)
	if err := l.Unlock(context.Background()); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Unlock after expiry = %v; want ErrLockLost", err)
	}
	if _, err := lk.TryLock(context.Background(), key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryLock after the expired holder's Unlock = %v; want ErrNotObtained (the new holder keeps it)", err)
	}
	other.Unlock(context.Background())
}

func testExtendKeeps(t *testing.T, lk dlm.Locker, key string) {
	l := mustTryLock(t, lk, key, dlm.WithTTL(lockerTTL))
	end := time.Now().Add(2 * lockerTTL)
	for time.Now().Before(end) {
		time.Sleep(lockerTTL / 4)
		if err := l.Extend(context.Background(), lockerTTL); err != nil {
			t.Fatalf("Extend = %v", err)
		}
	}
	if _, err := lk.TryLock(context.Background(), key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryLock of a lock extended past its first TTL = %v; want ErrNotObtained", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock = %v", err)
	}
}

func testDoHoldsAndReleases(t *testing.T, lk dlm.Locker, key string) {
	boom := errors.New("boom")
	err := lk.Do(context.Background(), key, func(ctx context.Context) error {
		if dlm.LockFromContext(ctx) == nil {
			t.Error("LockFromContext in Do's function = nil")
		}
		if _, err := lk.TryLock(ctx, key); !errors.Is(err, dlm.ErrNotObtained) {
			t.Errorf("TryLock(%q) inside Do = %v; want ErrNotObtained", key, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("Do = %v; want the function's error", err)
	}
	mustTryLock(t, lk, key).Unlock(context.Background())
}

func testLockerDoOutlivesTTL(t *testing.T, lk dlm.Locker, key string) {
	err := lk.Do(context.Background(), key, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(2 * lockerTTL):
			return nil
		}
	}, dlm.WithTTL(lockerTTL))
	if err != nil {
		t.Errorf("Do running two TTLs = %v; want nil (auto-extension)", err)
	}
}

func testDoCancel(t *testing.T, lk dlm.Locker, key string) {
	ctx, cancel := context.WithCancel(context.Background())
	err := lk.Do(ctx, key, func(fctx context.Context) error {
		cancel()
		select {
		case <-fctx.Done():
			return fctx.Err()
		case <-time.After(waitLimit):
			return fmt.Errorf("function's context still open %v after the caller's ended", waitLimit)
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Do cancelled = %v; want Canceled", err)
	}
	mustTryLock(t, lk, key).Unlock(context.Background())
}

func testLockerBadInput(t *testing.T, lk dlm.Locker, _ string) {
	ctx := context.Background()
	for name, err := range map[string]error{
		"Lock empty key":    func() error { _, err := lk.Lock(ctx, ""); return err }(),
		"TryLock empty key": func() error { _, err := lk.TryLock(ctx, ""); return err }(),
		"TryLock long key":  func() error { _, err := lk.TryLock(ctx, strings.Repeat("k", dlm.MaxKeyLen+1)); return err }(),
		"TryLock bad TTL":   func() error { _, err := lk.TryLock(ctx, "k", dlm.WithTTL(0)); return err }(),
		"Do nil function":   lk.Do(ctx, "k", nil),
		"Do empty key":      lk.Do(ctx, "", func(context.Context) error { return nil }),
	} {
		if !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("%s = %v; want ErrInvalid", name, err)
		}
	}
}
