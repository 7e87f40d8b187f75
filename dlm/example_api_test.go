package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// Unlock releases the lock on every node that holds it; a second Unlock
// says the lock is no longer held.
func ExampleLock_Unlock() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	l, err := m.Lock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unlock:", l.Unlock(ctx))
	fmt.Println("again, not held:", errors.Is(l.Unlock(ctx), dlm.ErrNotHeld))
	// Output:
	// unlock: <nil>
	// again, not held: true
}

// Extend gives a held lock a new TTL from now, and moves its validity.
func ExampleLock_Extend() {
	m, err := dlm.New(exampleNodes(3), dlm.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	l, err := m.Lock(ctx, "import:batch-7")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Unlock(ctx)
	before := l.Until()
	if err := l.Extend(ctx, time.Minute); err != nil {
		log.Fatal(err) // wraps ErrLockLost once the validity has ended
	}
	fmt.Println("valid for longer:", l.Until().Sub(before) > 30*time.Second)
	// Output:
	// valid for longer: true
}

// Close ends the manager: calls after it fail with ErrClosed. Unlock what
// it holds first; a lock still held is left to expire by its TTL.
func ExampleManager_Close() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := m.Lock(ctx, "migrations")
	if err != nil {
		log.Fatal(err)
	}
	l.Unlock(ctx)
	fmt.Println("close:", m.Close())
	_, err = m.Lock(ctx, "migrations")
	fmt.Println("after Close:", errors.Is(err, dlm.ErrClosed))
	// Output:
	// close: <nil>
	// after Close: true
}

// DoAll holds one lock over several keys while the job runs: here a
// transfer between two accounts, whichever order the keys come in.
func ExampleManager_DoAll() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	err = m.DoAll(context.Background(), []string{"account:B", "account:A"}, func(ctx context.Context) error {
		fmt.Println("holding", dlm.LockFromContext(ctx).Keys())
		return nil
	})
	fmt.Println("DoAll:", err)
	// Output:
	// holding [account:A account:B]
	// DoAll: <nil>
}

// TryLockAll makes one attempt at a lock over several keys: if any of them
// is held elsewhere, none is taken.
func ExampleManager_TryLockAll() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	held, err := m.TryLock(ctx, "seat:12B")
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.TryLockAll(ctx, []string{"seat:12A", "seat:12B"})
	fmt.Println("one seat taken, none obtained:", errors.Is(err, dlm.ErrNotObtained))
	held.Unlock(ctx)

	both, err := m.TryLockAll(ctx, []string{"seat:12A", "seat:12B"})
	fmt.Println("both free:", err)
	both.Unlock(ctx)
	// Output:
	// one seat taken, none obtained: true
	// both free: <nil>
}

// TryRLock takes a read lock beside other readers, in one attempt; a
// writer's lock keeps it out.
func ExampleManager_TryRLock() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	w, err := m.TryLock(ctx, "config")
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.TryRLock(ctx, "config")
	fmt.Println("reader while a writer holds it refused:", errors.Is(err, dlm.ErrNotObtained))
	w.Unlock(ctx)

	r, err := m.TryRLock(ctx, "config")
	fmt.Println("reader after the writer left:", err)
	r.Unlock(ctx)
	// Output:
	// reader while a writer holds it refused: true
	// reader after the writer left: <nil>
}

// Election returns the election of a name; Leader reads, without taking
// part, who leads it and the value the leader stored.
func ExampleElection_Leader() {
	m, err := dlm.New(electionNodes(), dlm.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	election, err := m.Election("scheduler")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	o, err := election.Leader(ctx)
	fmt.Printf("before any campaign: leader %v, %v\n", o.Leader, err)
	ld, err := election.Campaign(ctx, "host-1:8080")
	if err != nil {
		log.Fatal(err)
	}
	o, err = election.Leader(ctx)
	fmt.Printf("after: leader %v at %s, %v\n", o.Leader, o.Value, err)
	ld.Resign(ctx)
	// Output:
	// before any campaign: leader false, <nil>
	// after: leader true at host-1:8080, <nil>
}

// WithTTL sets how long the nodes keep a lock that is neither extended nor
// released: the lock is safe to use for its validity, the TTL less the
// time the attempt took and the allowance for clock drift.
func ExampleWithTTL() {
	m, err := dlm.New(exampleNodes(3), dlm.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	// A manager's TTL, and one call's own.
	short, err := m.Lock(ctx, "cache:warm", dlm.WithTTL(2*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer short.Unlock(ctx)
	left := time.Until(short.Until())
	fmt.Println("valid for less than the TTL:", left > time.Second && left < 2*time.Second)
	// Output:
	// valid for less than the TTL: true
}

// WithRetry bounds how a Lock call waits: here at most three attempts, a
// fixed 10 ms apart, before the call gives up with ErrNotObtained.
func ExampleWithRetry() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	held, err := m.Lock(ctx, "report")
	if err != nil {
		log.Fatal(err)
	}
	defer held.Unlock(ctx)
	_, err = m.Lock(ctx, "report", dlm.WithRetry(3, dlm.FixedBackoff(10*time.Millisecond)))
	fmt.Println("gave up:", errors.Is(err, dlm.ErrNotObtained))
	// Output:
	// gave up: true
}
