package dlm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// Do holds the lock while the job runs, extending it as needed, and
// releases it when the job returns.
func ExampleManager_Do() {
	m, err := dlm.New(exampleNodes(5), dlm.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	err = m.Do(context.Background(), "nightly-report", func(ctx context.Context) error {
		// The job may run longer than the TTL: the lock is extended in the
		// background. Stop when ctx is done, as the lock may be lost.
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		fmt.Println("report written under", dlm.LockFromContext(ctx).Key())
		return nil
	})
	fmt.Println("Do:", err)
	// Output:
	// report written under nightly-report
	// Do: <nil>
}

// WithWaitTimeout bounds the wait alone: Do gives up when another holder
// keeps the lock past it, and once Do has the lock, the job runs as long as
// it takes, the lock extended meanwhile.
func ExampleManager_Do_waitTimeout() {
	m, err := dlm.New(exampleNodes(3), dlm.WithTTL(200*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	// Free: the job outlives the wait bound and the TTL alike.
	err = m.Do(context.Background(), "deploy", func(ctx context.Context) error {
		select {
		case <-time.After(600 * time.Millisecond):
			fmt.Println("deployed")
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, dlm.WithWaitTimeout(100*time.Millisecond))
	fmt.Println("Do:", err)

	// Held elsewhere: Do gives up after the bound, without running the job.
	held, err := m.Lock(context.Background(), "deploy", dlm.WithAutoExtend(dlm.AutoExtend{}))
	if err != nil {
		log.Fatal(err)
	}
	defer held.Unlock(context.Background())
	err = m.Do(context.Background(), "deploy", func(ctx context.Context) error {
		fmt.Println("not reached")
		return nil
	}, dlm.WithWaitTimeout(100*time.Millisecond))
	fmt.Println("gave up waiting:", errors.Is(err, context.DeadlineExceeded), errors.Is(err, dlm.ErrNotObtained))
	// Output:
	// deployed
	// Do: <nil>
	// gave up waiting: true true
}

// When the lock is lost while the job runs, the job's context is cancelled
// and Do's error says so.
func ExampleManager_Do_lockLost() {
	nodes := exampleNodes(3)
	m, err := dlm.New(nodes, dlm.WithTTL(200*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	err = m.Do(context.Background(), "invoice-42", func(ctx context.Context) error {
		forgetKeys(nodes...) // the nodes restart empty
		<-ctx.Done()         // the next extension finds the lock gone
		fmt.Println("job cancelled, lock lost:", errors.Is(context.Cause(ctx), dlm.ErrLockLost))
		return errors.New("invoice not sent")
	})
	fmt.Println("Do reports the loss:", errors.Is(err, dlm.ErrLockLost))
	// Output:
	// job cancelled, lock lost: true
	// Do reports the loss: true
}

// TryLock makes a single attempt: a lock held elsewhere is an error
// wrapping ErrNotObtained.
func ExampleManager_TryLock() {
	m, err := dlm.New(exampleNodes(5))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	l, err := m.TryLock(ctx, "cron:cleanup")
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.TryLock(ctx, "cron:cleanup")
	fmt.Println("second TryLock not obtained:", errors.Is(err, dlm.ErrNotObtained))

	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	l, err = m.TryLock(ctx, "cron:cleanup")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("obtained again after Unlock")
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// second TryLock not obtained: true
	// obtained again after Unlock
}

// LockAll takes several keys as one lock: on each node all of them or
// none. The common {tag} keeps them in one hash slot for Redis Cluster.
func ExampleManager_LockAll() {
	m, err := dlm.New(exampleNodes(5))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	l, err := m.LockAll(ctx, []string{"{order42}:stock", "{order42}:payment", "{order42}:stock"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked:", l.Keys())

	_, err = m.TryLock(ctx, "{order42}:payment")
	fmt.Println("payment alone not obtained:", errors.Is(err, dlm.ErrNotObtained))

	if err := l.Extend(ctx, time.Minute); err != nil {
		log.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// locked: [{order42}:payment {order42}:stock]
	// payment alone not obtained: true
}

// With WithAutoExtend, a lock taken with Lock or TryLock stays held past
// its TTL until Unlock; Lost says when it is gone.
func ExampleWithAutoExtend() {
	m, err := dlm.New(exampleNodes(5), dlm.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	l, err := m.Lock(ctx, "leader", dlm.WithAutoExtend(dlm.AutoExtend{}))
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-time.After(2 * time.Second): // two TTLs
		fmt.Println("still leader")
	case <-l.Lost():
		fmt.Println("leadership lost")
	}

	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	<-l.Lost() // closed by Unlock
	fmt.Println("stepped down")
	// Output:
	// still leader
	// stepped down
}

// A job runner takes the lock and hands it to a worker, which may run in
// another process: the Handle travels as JSON.
func ExampleManager_Resume() {
	nodes := exampleNodes(5)
	ctx := context.Background()

	// The job runner.
	runner, err := dlm.New(nodes, dlm.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	l, err := runner.Lock(ctx, "job:7")
	if err != nil {
		log.Fatal(err)
	}
	msg, err := json.Marshal(l.Handle())
	if err != nil {
		log.Fatal(err)
	}

	// The worker, with a Manager of its own over the same nodes.
	worker, err := dlm.New(nodes, dlm.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer worker.Close()
	var h dlm.Handle
	if err := json.Unmarshal(msg, &h); err != nil {
		log.Fatal(err)
	}
	wl, err := worker.Resume(ctx, h)
	if err != nil {
		log.Fatal(err)
	}
	// Extending confirms the lock is still held.
	if err := wl.Extend(ctx, 10*time.Second); err != nil {
		log.Fatal(err)
	}
	fmt.Println("worker holds", wl.Key())
	if err := wl.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// The runner no longer holds it.
	err = l.Extend(ctx, 10*time.Second)
	fmt.Println("runner's lock lost:", errors.Is(err, dlm.ErrLockLost))
	// Output:
	// worker holds job:7
	// runner's lock lost: true
}
