package dlmtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// TestShared runs the suite of the read-write lock's and the semaphore's
// semantics against the managers open returns: readers sharing a key and
// excluding writers, writers preferred over new readers, read leases and
// permits that expire, extend and are released, RDo and Semaphore.Do, the
// refused upgrade, the limit of a semaphore, and bad input. Each subtest
// gets a fresh manager from open and uses keys of its own; the subtests
// run in parallel, so open must be safe to call from several goroutines. The semaphores
// have a limit of 2 at most, whose permits need every node of a manager of
// up to 3 nodes (see [dlm.SemaphoreQuorum]): give it nodes that answer. It
// runs against managers on real redis-servers and against package
// memlock's in-memory manager, so that users' tests written against
// memlock behave as production does. Timings are generous: it is meant to
// pass on a loaded machine.
func TestShared(t *testing.T, open func(t *testing.T) *dlm.Manager) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, m *dlm.Manager, key string)
	}{
		{"ReadersShare", testReadersShare},
		{"WriterPreferred", testWriterPreferred},
		{"TryLockRecordsNoIntent", testTryLockRecordsNoIntent},
		{"ReaderWaitsForWriter", testReaderWaitsForWriter},
		{"ReadLeaseExpiry", testReadLeaseExpiry},
		{"ReadExtendKeeps", testReadExtendKeeps},
		{"ReadUnlockTwice", testReadUnlockTwice},
		{"RDo", testRDo},
		{"RDoOutlivesTTL", testRDoOutlivesTTL},
		{"ReadInsideDo", testReadInsideDo},
		{"LockUnderOwnReadLease", testLockUnderOwnReadLease},
		{"PermitLimit", testPermitLimit},
		{"AcquireWaitsForRelease", testAcquireWaitsForRelease},
		{"PermitExpiry", testPermitExpiry},
		{"PermitExtendKeeps", testPermitExtendKeeps},
		{"PermitUnlockTwice", testPermitUnlockTwice},
		{"SemaphoreDo", testSemaphoreDo},
		{"SharedBadInput", testSharedBadInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t), "shared-"+strings.ToLower(tc.name))
		})
	}
}

// waitLimit bounds every wait of the suite for something that happens
// within a round trip or two, or within a TTL of lockerTTL once it ends.
const waitLimit = 10 * time.Second

// bounded returns a context that ends waitLimit from now, for the calls
// that wait (Do and RDo), so that a broken manager fails the test rather
// than hang it.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func mustTryRLock(t *testing.T, m *dlm.Manager, key string, opts ...dlm.Option) *dlm.Lock {
	t.Helper()
	l, err := m.TryRLock(context.Background(), key, opts...)
	if err != nil {
		t.Fatalf("TryRLock(%q) = %v; want a read lock", key, err)
	}
	if !l.Shared() || l.Token() != 0 {
		t.Errorf("read lock: Shared() = %v, Token() = %d; want true, 0 (no fencing for readers)", l.Shared(), l.Token())
	}
	return l
}

func mustSemaphore(t *testing.T, m *dlm.Manager, name string, limit int) *dlm.Semaphore {
	t.Helper()
	s, err := m.Semaphore(name, limit)
	if err != nil {
		t.Fatalf("Semaphore(%q, %d) = %v", name, limit, err)
	}
	return s
}

func mustTryAcquire(t *testing.T, s *dlm.Semaphore, opts ...dlm.Option) *dlm.Lock {
	t.Helper()
	l, err := s.TryAcquire(context.Background(), opts...)
	if err != nil {
		t.Fatalf("TryAcquire of %q (limit %d) = %v; want a permit", s.Name(), s.Limit(), err)
	}
	if !l.Shared() || l.Token() != 0 {
		t.Errorf("permit: Shared() = %v, Token() = %d; want true, 0", l.Shared(), l.Token())
	}
	return l
}

func unlock(t *testing.T, what string, l *dlm.Lock) {
	t.Helper()
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock of %s = %v", what, err)
	}
}

func testReadersShare(t *testing.T, m *dlm.Manager, key string) {
	ctx := context.Background()
	r1, r2 := mustTryRLock(t, m, key), mustTryRLock(t, m, key)
	if _, err := m.TryLock(ctx, key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryLock(%q) while two readers hold it = %v; want ErrNotObtained", key, err)
	}
	unlock(t, "the first reader", r1)
	if _, err := m.TryLock(ctx, key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryLock(%q) while one reader holds it = %v; want ErrNotObtained", key, err)
	}
	unlock(t, "the second reader", r2)
	w := mustTryLock(t, m, key)
	if _, err := m.TryRLock(ctx, key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryRLock(%q) while a writer holds it = %v; want ErrNotObtained", key, err)
	}
	unlock(t, "the writer", w)
	unlock(t, "a reader after the writer", mustTryRLock(t, m, key))
}

func testWriterPreferred(t *testing.T, m *dlm.Manager, key string) {
	ctx := context.Background()
	r := mustTryRLock(t, m, key, dlm.WithTTL(lockerTTL))
	released := make(chan time.Time, 1)
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, waitLimit)
		defer cancel()
		w, err := m.Lock(wctx, key)
		if err == nil {
			select {
			case at := <-released:
				if time.Now().Before(at) {
					err = errors.New("obtained before the reader's release")
				}
			default:
				err = errors.New("obtained while the reader held it")
			}
			w.Unlock(ctx)
		}
		got <- err
	}()
	// The waiting writer's first attempt records its intent: from then on
	// no new reader is let in. Until it has, a new reader may be.
	deadline := time.Now().Add(waitLimit)
	for {
		l, err := m.TryRLock(ctx, key)
		if errors.Is(err, dlm.ErrNotObtained) {
			break
		}
		if err != nil {
			t.Fatalf("TryRLock(%q) while a reader holds it = %v", key, err)
		}
		l.Unlock(ctx)
		if time.Now().After(deadline) {
			t.Fatalf("new readers still let in %v after a writer began to wait; want them kept out", waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The reader already in keeps its lease while the writer waits.
	if err := r.Extend(ctx, lockerTTL); err != nil {
		t.Errorf("Extend of the reader in while a writer waits = %v; want nil", err)
	}
	released <- time.Now()
	unlock(t, "the reader", r)
	if err := <-got; err != nil {
		t.Fatalf("Lock(%q) waiting for the reader: %v", key, err)
	}
	unlock(t, "a reader after the writer", mustTryRLock(t, m, key))
}

func testTryLockRecordsNoIntent(t *testing.T, m *dlm.Manager, key string) {
	r := mustTryRLock(t, m, key)
	if _, err := m.TryLock(context.Background(), key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryLock(%q) while a reader holds it = %v; want ErrNotObtained", key, err)
	}
	// TryLock does not wait, so it keeps no reader out.
	unlock(t, "the second reader", mustTryRLock(t, m, key))
	unlock(t, "the first reader", r)
}

func testReaderWaitsForWriter(t *testing.T, m *dlm.Manager, key string) {
	w := mustTryLock(t, m, key)
	err := obtainedAfterRelease(t, "the writer", w, func(ctx context.Context) (*dlm.Lock, error) {
		return m.RLock(ctx, key)
	})
	if err != nil {
		t.Errorf("RLock(%q) waiting for the writer: %v", key, err)
	}
}

func testReadLeaseExpiry(t *testing.T, m *dlm.Manager, key string) {
	ctx := context.Background()
	start := time.Now()
	r := mustTryRLock(t, m, key, dlm.WithTTL(lockerTTL))
	granted := time.Now() // the nodes' leases end by a TTL after this
	if until := r.Until(); !until.After(start) || until.After(start.Add(lockerTTL)) {
		t.Errorf("Until = %v after the start; want within the TTL %v", until.Sub(start), lockerTTL)
	}
	select {
	case <-r.Lost():
	case <-time.After(lockerTTL + waitLimit):
		t.Fatalf("Lost still open %v after a read lease of %v without extension", lockerTTL+waitLimit, lockerTTL)
	}
	for !time.Now().After(granted.Add(lockerTTL + 10*time.Millisecond)) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Extend(ctx, lockerTTL); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Extend of a read lease after its end = %v; want ErrLockLost", err)
	}
	// The crashed reader's share is free: a writer gets the key.
	w := mustTryLock(t, m, key)
	if err := r.Unlock(ctx); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Unlock of a read lease after its end = %v; want ErrLockLost", err)
	}
	if _, err := m.TryRLock(ctx, key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryRLock after the ended reader's Unlock = %v; want ErrNotObtained (the writer keeps it)", err)
	}
	unlock(t, "the writer", w)
}

func testReadExtendKeeps(t *testing.T, m *dlm.Manager, key string) {
	r := mustTryRLock(t, m, key, dlm.WithTTL(lockerTTL))
	for end := time.Now().Add(2 * lockerTTL); time.Now().Before(end); {
		time.Sleep(lockerTTL / 4)
		if err := r.Extend(context.Background(), lockerTTL); err != nil {
			t.Fatalf("Extend of a read lease = %v", err)
		}
	}
	if _, err := m.TryLock(context.Background(), key); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryLock of a key whose read lease was extended past its first TTL = %v; want ErrNotObtained", err)
	}
	unlock(t, "the reader", r)
}

func testReadUnlockTwice(t *testing.T, m *dlm.Manager, key string) {
	r := mustTryRLock(t, m, key)
	unlock(t, "the reader", r)
	if err := r.Unlock(context.Background()); !errors.Is(err, dlm.ErrNotHeld) || errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("second Unlock of a read lock = %v; want ErrNotHeld, not ErrLockLost", err)
	}
	if err := r.Extend(context.Background(), time.Second); !errors.Is(err, dlm.ErrNotHeld) {
		t.Errorf("Extend of a read lock after Unlock = %v; want ErrNotHeld", err)
	}
}

func testRDo(t *testing.T, m *dlm.Manager, key string) {
	boom := errors.New("boom")
	err := m.RDo(bounded(t), key, func(ctx context.Context) error {
		if l := dlm.LockFromContext(ctx); l == nil || !l.Shared() {
			t.Errorf("LockFromContext in RDo's function = %v; want the read lock", l)
		}
		if _, err := m.Lock(ctx, key); !errors.Is(err, dlm.ErrUpgrade) || !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("Lock(%q) inside RDo = %v; want ErrUpgrade (an ErrInvalid)", key, err)
		}
		if _, err := m.TryLock(context.Background(), key); !errors.Is(err, dlm.ErrNotObtained) {
			t.Errorf("TryLock(%q) by another caller inside RDo = %v; want ErrNotObtained", key, err)
		}
		unlock(t, "another reader inside RDo", mustTryRLock(t, m, key))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("RDo = %v; want the function's error", err)
	}
	mustTryLock(t, m, key).Unlock(context.Background())
}

func testRDoOutlivesTTL(t *testing.T, m *dlm.Manager, key string) {
	err := m.RDo(bounded(t), key, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(2 * lockerTTL):
		}
		if _, err := m.TryLock(context.Background(), key); !errors.Is(err, dlm.ErrNotObtained) {
			t.Errorf("TryLock(%q) after two TTLs in RDo = %v; want ErrNotObtained", key, err)
		}
		return nil
	}, dlm.WithTTL(lockerTTL))
	if err != nil {
		t.Errorf("RDo running two TTLs = %v; want nil (auto-extension)", err)
	}
}

func testReadInsideDo(t *testing.T, m *dlm.Manager, key string) {
	err := m.Do(bounded(t), key, func(ctx context.Context) error {
		if _, err := m.TryRLock(ctx, key); !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("TryRLock(%q) inside Do = %v; want ErrInvalid (it would wait for its own writer)", key, err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("Do = %v", err)
	}
}

func testLockUnderOwnReadLease(t *testing.T, m *dlm.Manager, key string) {
	r := mustTryRLock(t, m, key, dlm.WithTTL(lockerTTL))
	// Outside RDo the manager cannot tell the reader from another caller:
	// like sync.RWMutex, the write lock waits for the reader's own lease,
	// which, not extended, ends with its TTL.
	ctx, cancel := context.WithTimeout(context.Background(), lockerTTL+waitLimit)
	defer cancel()
	w, err := m.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock(%q) by the holder of a read lease = %v; want the lock once the lease ends", key, err)
	}
	if time.Now().Before(r.Until()) {
		t.Errorf("Lock(%q) obtained %v before the caller's own read lease ended", key, time.Until(r.Until()))
	}
	unlock(t, "the writer", w)
	if err := r.Unlock(context.Background()); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Unlock of the read lease after the writer's turn = %v; want ErrLockLost", err)
	}
}

func testPermitLimit(t *testing.T, m *dlm.Manager, key string) {
	s := mustSemaphore(t, m, key, 2)
	p1, p2 := mustTryAcquire(t, s), mustTryAcquire(t, s)
	if _, err := s.TryAcquire(context.Background()); !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("third TryAcquire of a limit of 2 = %v; want ErrNotObtained", err)
	}
	// Another client's semaphore of the same name and limit shares it.
	if _, err := mustSemaphore(t, m, key, 2).TryAcquire(context.Background()); !errors.Is(err, dlm.ErrNotObtained) {
		t.Fatalf("TryAcquire by another Semaphore of the same name = %v; want ErrNotObtained", err)
	}
	unlock(t, "the first permit", p1)
	p3 := mustTryAcquire(t, s)
	if _, err := s.TryAcquire(context.Background()); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryAcquire with two permits held again = %v; want ErrNotObtained", err)
	}
	unlock(t, "the second permit", p2)
	unlock(t, "the third permit", p3)
}

func testAcquireWaitsForRelease(t *testing.T, m *dlm.Manager, key string) {
	s := mustSemaphore(t, m, key, 1)
	p := mustTryAcquire(t, s)
	released := make(chan time.Time, 1)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		p2, err := s.Acquire(ctx)
		if err == nil {
			select {
			case at := <-released:
				if time.Now().Before(at) {
					err = errors.New("obtained before the release")
				}
			default:
				err = errors.New("obtained while the only permit was held")
			}
			p2.Unlock(context.Background())
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // lets the first attempt fail, if it is quick
	released <- time.Now()
	unlock(t, "the permit", p)
	if err := <-got; err != nil {
		t.Errorf("Acquire waiting for the release: %v", err)
	}
}

func testPermitExpiry(t *testing.T, m *dlm.Manager, key string) {
	ctx := context.Background()
	s := mustSemaphore(t, m, key, 1)
	p := mustTryAcquire(t, s, dlm.WithTTL(lockerTTL))
	// The nodes granted the permit before its reply came: their records
	// end by a TTL after now, however long the request took to reach them.
	granted := time.Now()
	// Lost closes; that it closes before Until is proven on virtual time
	// (TestPermitLostBeforeUntil in package dlm), where no scheduler
	// delays the reading of the clock after it.
	select {
	case <-p.Lost():
	case <-time.After(lockerTTL + waitLimit):
		t.Fatalf("Lost still open %v after a permit of %v without extension", lockerTTL+waitLimit, lockerTTL)
	}
	for !time.Now().After(granted.Add(lockerTTL + 10*time.Millisecond)) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Extend(ctx, lockerTTL); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Extend of a permit after its end = %v; want ErrLockLost", err)
	}
	// The crashed holder's permit freed itself.
	other := mustTryAcquire(t, s)
	if err := p.Unlock(ctx); !errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("Unlock of a permit after its end = %v; want ErrLockLost", err)
	}
	if _, err := s.TryAcquire(ctx); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryAcquire after the ended permit's Unlock = %v; want ErrNotObtained (the new holder keeps it)", err)
	}
	unlock(t, "the new permit", other)
}

func testPermitExtendKeeps(t *testing.T, m *dlm.Manager, key string) {
	s := mustSemaphore(t, m, key, 1)
	p := mustTryAcquire(t, s, dlm.WithTTL(lockerTTL))
	for end := time.Now().Add(2 * lockerTTL); time.Now().Before(end); {
		time.Sleep(lockerTTL / 4)
		if err := p.Extend(context.Background(), lockerTTL); err != nil {
			t.Fatalf("Extend of a permit = %v", err)
		}
	}
	if _, err := s.TryAcquire(context.Background()); !errors.Is(err, dlm.ErrNotObtained) {
		t.Errorf("TryAcquire with the only permit extended past its first TTL = %v; want ErrNotObtained", err)
	}
	unlock(t, "the permit", p)
}

func testPermitUnlockTwice(t *testing.T, m *dlm.Manager, key string) {
	p := mustTryAcquire(t, mustSemaphore(t, m, key, 2))
	unlock(t, "the permit", p)
	if err := p.Unlock(context.Background()); !errors.Is(err, dlm.ErrNotHeld) || errors.Is(err, dlm.ErrLockLost) {
		t.Errorf("second Unlock of a permit = %v; want ErrNotHeld, not ErrLockLost", err)
	}
	if err := p.Extend(context.Background(), time.Second); !errors.Is(err, dlm.ErrNotHeld) {
		t.Errorf("Extend of a permit after Unlock = %v; want ErrNotHeld", err)
	}
}

func testSemaphoreDo(t *testing.T, m *dlm.Manager, key string) {
	s := mustSemaphore(t, m, key, 1)
	boom := errors.New("boom")
	err := s.Do(bounded(t), func(ctx context.Context) error {
		if l := dlm.LockFromContext(ctx); l == nil || !l.Shared() {
			t.Errorf("LockFromContext in Semaphore.Do's function = %v; want the permit", l)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(2 * lockerTTL):
		}
		if _, err := s.TryAcquire(context.Background()); !errors.Is(err, dlm.ErrNotObtained) {
			t.Errorf("TryAcquire after two TTLs in Do = %v; want ErrNotObtained (auto-extension)", err)
		}
		return boom
	}, dlm.WithTTL(lockerTTL))
	if !errors.Is(err, boom) {
		t.Errorf("Semaphore.Do = %v; want the function's error", err)
	}
	unlock(t, "a permit after Do", mustTryAcquire(t, s))
}

func testSharedBadInput(t *testing.T, m *dlm.Manager, _ string) {
	ctx := context.Background()
	for name, err := range map[string]error{
		"TryRLock empty key": func() error { _, err := m.TryRLock(ctx, ""); return err }(),
		"RLock bad TTL":      func() error { _, err := m.RLock(ctx, "k", dlm.WithTTL(0)); return err }(),
		"RDo nil function":   m.RDo(ctx, "k", nil),
		"Semaphore empty":    func() error { _, err := m.Semaphore("", 1); return err }(),
		"Semaphore limit 0":  func() error { _, err := m.Semaphore("k", 0); return err }(),
		"Semaphore too many": func() error { _, err := m.Semaphore("k", dlm.MaxPermits+1); return err }(),
		"negative quorum":    func() error { _, err := m.Semaphore("k", 1, dlm.WithPermitQuorum(-1)); return err }(),
	} {
		if !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("%s = %v; want ErrInvalid", name, err)
		}
	}
}
