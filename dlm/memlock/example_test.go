package memlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// sendInvoice is code under test: it depends on dlm.Locker, which the
// Redis-backed manager implements in production.
func sendInvoice(ctx context.Context, lk dlm.Locker, id string) error {
	return lk.Do(ctx, "invoice:"+id, func(ctx context.Context) error {
		return nil // send it
	})
}

// A unit test gives the code an in-memory manager: the same errors and
// semantics as on Redis, without Redis.
func ExampleNew() {
	m, err := memlock.New()
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	fmt.Println("free:", sendInvoice(ctx, m, "42"))

	l, err := m.TryLock(ctx, "invoice:42") // another worker holds it
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.TryLock(ctx, "invoice:42")
	fmt.Println("held elsewhere:", errors.Is(err, dlm.ErrNotObtained))
	l.Unlock(ctx)
	fmt.Println("second unlock:", errors.Is(l.Unlock(ctx), dlm.ErrNotHeld))
	// Output:
	// free: <nil>
	// held elsewhere: true
	// second unlock: true
}
