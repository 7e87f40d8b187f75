package valkeygo_test

import (
	"context"
	"errors"
	"log"

	"github.com/valkey-io/valkey-go"

	"github.com/dlmgo/redlock/backends/valkeygo"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// A manager may mix nodes from URLs with nodes of clients the program
// already has: here a node opened from a redis+valkey:// URL (the import of
// the package registers "valkey"), and two valkey-go clients the program
// keeps. A manager from dlm.New closes none of them: the program does,
// after the manager.
//
// This example needs Valkey or Redis servers, so it is compiled but not
// run.
func ExampleNewNode() {
	opened, err := dlm.OpenNode("redis+valkey://:secret@10.0.0.1:6379")
	if err != nil {
		log.Fatal(err)
	}
	defer opened.Close() // dlm.New closes no node: the program does, after the manager
	nodes := []driver.Node{opened}
	for _, addr := range []string{"10.0.0.2:6379", "10.0.0.3:6379"} {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		nodes = append(nodes, valkeygo.NewNode(c))
	}
	m, err := dlm.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	ctx := context.Background()
	l, err := m.TryLock(ctx, "cache:rebuild")
	if errors.Is(err, dlm.ErrNotObtained) {
		return // another process rebuilds the cache
	} else if err != nil {
		log.Fatal(err)
	}
	defer l.Unlock(ctx)
	// Rebuild the cache before l.Until().
}
