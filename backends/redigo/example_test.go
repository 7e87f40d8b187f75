package redigo_test

import (
	"context"
	"log"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/backends/redigo"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// Importing the package registers the "redigo" driver (a blank import
// does, when nothing else of the package is used). dlm.Open then makes a
// redigo pool for each node URL, and the manager's Close closes them.
//
// This example needs Redis servers, so it is compiled but not run.
func Example_open() {
	m, err := dlm.Open([]string{
		"redis+redigo://:secret@10.0.0.1:6379/0?pool_size=16",
		"redis+redigo://:secret@10.0.0.2:6379/0?pool_size=16",
		"redis+redigo://:secret@10.0.0.3:6379/0?pool_size=16",
	}, dlm.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	ctx := context.Background()
	lock, err := m.Lock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	// Act on order 42 before lock.Until().
}

// NewNode wraps pools the program already has, given the address to name
// each node by. Neither the nodes nor the manager close the pools: the
// program does, after the manager.
//
// This example needs Redis servers, so it is compiled but not run.
func ExampleNewNode() {
	var pools []*redis.Pool
	var nodes []driver.Node
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		pool := &redis.Pool{
			// DialContext, so that connecting honours the request's context.
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr)
			},
			// A bound to wait on, rather than a connection per request.
			MaxActive: 16,
			MaxIdle:   16,
			Wait:      true,
			// Check a connection that sat idle, so that one the server
			// closed (a restart) is replaced instead of failing a request.
			TestOnBorrow: func(c redis.Conn, idleSince time.Time) error {
				if time.Since(idleSince) < time.Second {
					return nil
				}
				_, err := c.Do("PING")
				return err
			},
		}
		pools = append(pools, pool)
		nodes = append(nodes, redigo.NewNode(pool, addr))
	}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()

	m, err := dlm.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	err = m.Do(context.Background(), "reports:nightly", func(ctx context.Context) error {
		return nil // the job; ctx is cancelled if the lock is lost
	})
	if err != nil {
		log.Fatal(err)
	}
}
