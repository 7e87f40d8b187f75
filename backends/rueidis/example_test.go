package rueidis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/rueidis"

	redlockrueidis "github.com/dlmgo/redlock/backends/rueidis"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// Importing the package registers the "rueidis" driver (a blank import
// does, when nothing else of the package is used). dlm.Open then makes a
// rueidis client for each node URL, and the manager's Close closes them.
//
// This example needs Redis servers, so it is compiled but not run.
func Example_open() {
	m, err := dlm.Open([]string{
		"redis+rueidis://:secret@10.0.0.1:6379/0",
		"redis+rueidis://:secret@10.0.0.2:6379/0",
		"rediss+rueidis://user:secret@10.0.0.3:6380?tls_ca_file=/etc/redis/ca.pem",
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

// NewNode wraps clients the program already has; concurrent lock requests
// share each client's pipelined connections. Neither the nodes nor the
// manager close the clients: the program does, after the manager. The
// backend shares its package name with the client library, so one of them
// is imported under another name.
//
// This example needs Redis servers, so it is compiled but not run.
func ExampleNewNode() {
	var clients []rueidis.Client
	var nodes []driver.Node
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			log.Fatal(err)
		}
		clients = append(clients, c)
		nodes = append(nodes, redlockrueidis.NewNode(c))
	}
	defer func() {
		for _, c := range clients {
			c.Close()
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
