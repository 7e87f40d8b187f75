package goredis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/backends/goredis"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// Importing the package registers the "goredis" driver (a blank import
// does, when nothing else of the package is used). dlm.Open then makes a
// go-redis client for each node URL, and the manager's Close closes them.
//
// This example needs Redis servers, so it is compiled but not run.
func Example_open() {
	m, err := dlm.Open([]string{
		"redis+goredis://:secret@10.0.0.1:6379/0?dial_timeout=100ms",
		"redis+goredis://:secret@10.0.0.2:6379/0?dial_timeout=100ms",
		"redis+goredis://:secret@10.0.0.3:6379/0?dial_timeout=100ms",
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

// NewNode wraps clients the program already has. Neither the nodes nor the
// manager close them: the program does, after the manager.
//
// This example needs Redis servers, so it is compiled but not run.
func ExampleNewNode() {
	var clients []*redis.Client
	var nodes []driver.Node
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		clients = append(clients, rdb)
		nodes = append(nodes, goredis.NewNode(rdb))
	}
	defer func() {
		for _, rdb := range clients {
			rdb.Close()
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
