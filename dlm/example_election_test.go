package dlm_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// electionNodes returns three in-memory nodes for the election examples,
// which cannot start Redis; real code opens its nodes with dlm.Open.
func electionNodes() []driver.Node {
	return []driver.Node{memlock.NewNode("mem-0:6379"), memlock.NewNode("mem-1:6379"), memlock.NewNode("mem-2:6379")}
}

// Campaign waits until the caller leads; the leadership lasts until Resign,
// whatever becomes of Campaign's context.
func ExampleElection_Campaign() {
	m, err := dlm.New(electionNodes(), dlm.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	election, err := m.Election("scheduler")
	if err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	ld, err := election.Campaign(ctx, "host-1:8080")
	cancel() // bounds the wait only
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading as", ld.Value(), "in term", ld.Term())
	select {
	case <-ld.Lost():
		fmt.Println("deposed")
	case <-time.After(2 * time.Second): // two TTLs: extended meanwhile
		fmt.Println("still leading")
	}
	fmt.Println("resign:", ld.Resign(context.Background()))
	// Output:
	// leading as host-1:8080 in term 1
	// still leading
	// resign: <nil>
}

// Observe reports who leads, and each change; Leader reads it once.
func ExampleElection_Observe() {
	nodes := electionNodes()
	watcher, err := dlm.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer watcher.Close()
	candidate, err := dlm.New(nodes) // another process, as far as the nodes know
	if err != nil {
		log.Fatal(err)
	}
	defer candidate.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watched, err := watcher.Election("scheduler")
	if err != nil {
		log.Fatal(err)
	}
	changes, err := watched.Observe(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", <-changes)
	election, err := candidate.Election("scheduler")
	if err != nil {
		log.Fatal(err)
	}
	ld, err := election.Campaign(ctx, "host-2:8080")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", <-changes)
	now, err := watched.Leader(ctx)
	fmt.Printf("leader: %q %v\n", now.Value, err)
	ld.Resign(ctx)
	fmt.Printf("%+v\n", <-changes)
	// Output:
	// {Leader:false Value:}
	// {Leader:true Value:host-2:8080}
	// leader: "host-2:8080" <nil>
	// {Leader:false Value:}
}
