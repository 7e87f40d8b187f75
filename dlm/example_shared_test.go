package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/dlmgo/redlock/dlm"
)

// Readers share a key; the writer — the plain lock on the same key — gets
// it once they have left.
func ExampleManager_RLock() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	r1, err := m.RLock(ctx, "catalog")
	if err != nil {
		log.Fatal(err)
	}
	r2, err := m.TryRLock(ctx, "catalog")
	fmt.Println("second reader:", err)

	_, err = m.TryLock(ctx, "catalog")
	fmt.Println("writer while readers hold it refused:", errors.Is(err, dlm.ErrNotObtained))

	r1.Unlock(ctx)
	r2.Unlock(ctx)
	w, err := m.TryLock(ctx, "catalog")
	fmt.Println("writer after the readers left:", err)
	w.Unlock(ctx)
	// Output:
	// second reader: <nil>
	// writer while readers hold it refused: true
	// writer after the readers left: <nil>
}

// RDo holds a read lock while fn runs; asking for the write lock of the same
// key from inside is refused rather than left to wait for itself.
func ExampleManager_RDo() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	err = m.RDo(context.Background(), "catalog", func(ctx context.Context) error {
		fmt.Println("reading under a shared lease:", dlm.LockFromContext(ctx).Shared())
		_, err := m.Lock(ctx, "catalog")
		fmt.Println("upgrade refused:", errors.Is(err, dlm.ErrUpgrade))
		return nil
	})
	fmt.Println("RDo:", err)
	// Output:
	// reading under a shared lease: true
	// upgrade refused: true
	// RDo: <nil>
}

// A semaphore lets at most its limit of holders in; each permit needs more
// nodes than a majority once the limit is above 1.
func ExampleManager_Semaphore() {
	m, err := dlm.New(exampleNodes(5))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	s, err := m.Semaphore("encoders", 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("limit %d, each permit on %d of 5 nodes\n", s.Limit(), s.Quorum())
	a, _ := s.TryAcquire(ctx)
	b, _ := s.TryAcquire(ctx)
	_, err = s.TryAcquire(ctx)
	fmt.Println("third permit refused:", errors.Is(err, dlm.ErrNotObtained))
	a.Unlock(ctx)
	c, err := s.TryAcquire(ctx)
	fmt.Println("after one was given back:", err)
	b.Unlock(ctx)
	c.Unlock(ctx)

	_, err = m.Semaphore("encoders", 2, dlm.WithPermitQuorum(3))
	fmt.Println("a majority for 2 permits refused:", errors.Is(err, dlm.ErrInvalid))
	// Output:
	// limit 2, each permit on 4 of 5 nodes
	// third permit refused: true
	// after one was given back: <nil>
	// a majority for 2 permits refused: true
}

// The quorum a permit needs grows with the limit: more than N·L/(L+1)
// nodes.
func ExampleSemaphoreQuorum() {
	for _, limit := range []int{1, 2, 3, 4, 10} {
		fmt.Printf("5 nodes, limit %d: %d\n", limit, dlm.SemaphoreQuorum(5, limit))
	}
	// Output:
	// 5 nodes, limit 1: 3
	// 5 nodes, limit 2: 4
	// 5 nodes, limit 3: 4
	// 5 nodes, limit 4: 5
	// 5 nodes, limit 10: 5
}

// Do runs fn under a permit, kept extended while fn runs.
func ExampleSemaphore_Do() {
	m, err := dlm.New(exampleNodes(3))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.Semaphore("encoders", 3)
	if err != nil {
		log.Fatal(err)
	}
	err = s.Do(context.Background(), func(ctx context.Context) error {
		fmt.Println("encoding under a permit of", dlm.LockFromContext(ctx).Key())
		return nil
	})
	fmt.Println("Do:", err)
	// Output:
	// encoding under a permit of encoders
	// Do: <nil>
}
