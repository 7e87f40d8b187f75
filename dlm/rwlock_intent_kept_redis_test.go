package dlm_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestWaitingWriterKeepsIntentThroughFailedAttempt checks, on real
// redis-servers, that the attempt of a waiting writer that one node granted
// but a quorum refused leaves the writer's intent on that node: the
// attempt's release deletes its key there, not the intent. A release of
// the readers that has reached some nodes only leaves them free, and the
// writer's attempts take them and let them go again; if those took the
// intent with them, a new reader could gather a quorum of such nodes and
// overtake the waiting writer.
func TestWaitingWriterKeepsIntentThroughFailedAttempt(t *testing.T) {
	t.Parallel()
	servers, nodes := startNodes(t, 3)
	ctx := context.Background()
	newManager := func(opts ...dlm.Option) *dlm.Manager {
		m, err := dlm.New(nodes, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	rkey := dlm.DefaultKeyPrefix + "{doc}"
	r, err := newManager().RLock(ctx, "doc", dlm.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	defer r.Unlock(ctx)

	attempted := make(chan struct{}, 64)
	hook := hookFunc(func(e *dlm.Event) {
		if e.Kind == dlm.EventAttempt && e.Key == "doc" {
			select {
			case attempted <- struct{}{}:
			default:
			}
		}
	})
	// A minute's TTL: no intent lapses during the test.
	writers := newManager(dlm.WithHook(hook), dlm.WithTTL(time.Minute))
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if l, err := writers.Lock(wctx, "doc"); err == nil {
			l.Unlock(ctx)
		}
	}()
	defer func() { cancel(); <-done }()
	// Refused by the reader everywhere, the writer records its intent on
	// every node. (Its first attempt stops at two refusals, so the third
	// node may run it after the attempt has ended.)
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < len(servers); {
		n, err := servers[i].Do("EXISTS", script.IntentKey(rkey))
		switch {
		case err != nil:
			t.Fatal(err)
		case n == int64(1):
			i++
		case time.Now().After(deadline):
			t.Fatalf("node %d: no intent of the waiting writer within 5s", i)
		default:
			time.Sleep(5 * time.Millisecond)
		}
	}

	// The reader's release reaches node 0 alone.
	if _, err := servers[0].Do("DEL", rkey, rkey+script.ReadersSuffix); err != nil {
		t.Fatal(err)
	}
	for len(attempted) > 0 {
		<-attempted
	}
	for range 3 { // attempts sent after the DEL, which node 0 granted
		<-attempted
	}
	for i, s := range servers {
		n, err := s.Do("EXISTS", script.IntentKey(rkey))
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(1) {
			t.Errorf("node %d: the waiting writer's intent is gone after its failed attempts; want it kept while the writer waits", i)
		}
	}
	if v, err := servers[0].Do("GET", rkey); err != nil || v != nil {
		t.Errorf("node 0: lock key = %v, %v after the writer's failed attempts; want it released", v, err)
	}
}
