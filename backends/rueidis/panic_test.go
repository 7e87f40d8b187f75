package rueidis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/backends/rueidis"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// panicClient is a rueidis client whose requests panic, as a wrapper of the
// user's with a bug might; its dedicated connections panic too.
type panicClient struct{ rueidisclient.Client }

func (panicClient) Do(context.Context, rueidisclient.Completed) rueidisclient.RedisResult {
	panic("client panicked")
}

func (c panicClient) Dedicate() (rueidisclient.DedicatedClient, func()) {
	dc, cancel := c.Client.Dedicate()
	return panicDedicated{dc}, cancel
}

type panicDedicated struct{ rueidisclient.DedicatedClient }

func (panicDedicated) Do(context.Context, rueidisclient.Completed) rueidisclient.RedisResult {
	panic("dedicated client panicked")
}

type nopHandler struct{}

func (nopHandler) Message(string, string) {}
func (nopHandler) Subscribed(string)      {}

// TestClientPanic checks that a panic inside rueidis fails the call with a
// driver.PanicError, which a manager reports as the node's failure, on
// every path into the client: Eval, Ping, and a subscription's requests.
func TestClientPanic(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	c := newClient(t, rueidisclient.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true})
	n := rueidis.NewNode(panicClient{c})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var perr *driver.PanicError
	if _, err := n.Eval(ctx, driver.NewScript("return 1"), nil, nil); !errors.As(err, &perr) || perr.Client != rueidis.Name {
		t.Errorf("Eval = %v; want a *driver.PanicError from %s", err, rueidis.Name)
	}
	if err := n.(driver.Pinger).Ping(ctx); !errors.As(err, &perr) {
		t.Errorf("Ping = %v; want a *driver.PanicError", err)
	}
	if _, err := n.(driver.Setter).SetNXGet(ctx, "k", "v", "1000"); !errors.As(err, &perr) {
		t.Errorf("SetNXGet = %v; want a *driver.PanicError", err)
	}

	m, err := dlm.New([]driver.Node{n}, dlm.WithRetry(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.TryLock(ctx, "k")
	var nerr *dlm.NodeError
	if !errors.As(err, &nerr) || !errors.As(err, &perr) {
		t.Errorf("TryLock = %v; want a NodeError wrapping a PanicError", err)
	}

	sub, err := n.(driver.Subscriber).Subscribe(ctx, nopHandler{})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	if err := sub.Subscribe(ctx, "ch"); !errors.As(err, &perr) {
		t.Errorf("Subscription.Subscribe = %v; want a *driver.PanicError", err)
	}
	if err := sub.Unsubscribe(ctx, "ch"); !errors.As(err, &perr) {
		t.Errorf("Subscription.Unsubscribe = %v; want a *driver.PanicError", err)
	}
}

// TestClusterMultiSlot checks the case that used to take the program down:
// on a client in cluster mode, rueidis' command builder panics on a script
// whose keys hash to different slots. The node reports it as a
// driver.PanicError; it says it is a cluster, so that a manager refuses
// such a lock up front with ErrInvalid instead of sending it.
func TestClusterMultiSlot(t *testing.T) {
	t.Parallel()
	rc := redistest.StartRedisCluster(t)
	c := newClient(t, rueidisclient.ClientOption{InitAddress: rc.Addrs(), DisableCache: true})
	n := rueidis.NewNode(c)
	if s, ok := n.(driver.Sharded); !ok || !s.Sharded() {
		t.Errorf("NewNode(cluster client) does not report Sharded")
	}
	if plain := rueidis.NewNode(newClient(t, rueidisclient.ClientOption{InitAddress: rc.Addrs()[:1], DisableCache: true, ForceSingleClient: true})); plain.(driver.Sharded).Sharded() {
		t.Errorf("NewNode(single client) reports Sharded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := n.Eval(ctx, driver.NewScript("return 1"), []string{"a", "b"}, nil)
	var perr *driver.PanicError
	if !errors.As(err, &perr) || !strings.Contains(perr.Value, "slot") {
		t.Errorf("Eval over keys of two slots = %v; want a *driver.PanicError about slots", err)
	}
	m, err := dlm.New([]driver.Node{n})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.TryLockAll(ctx, []string{"a", "b"}); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("TryLockAll over keys of two slots = %v; want ErrInvalid", err)
	}
	l, err := m.TryLockAll(ctx, []string{"{o}:a", "{o}:b"})
	if err != nil {
		t.Fatalf("TryLockAll over keys sharing a tag: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
}
