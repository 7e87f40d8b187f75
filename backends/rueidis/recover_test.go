package rueidis

import (
	"context"
	"errors"
	"testing"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// TestOpenPanic checks that a panic in rueidis.NewClient fails Open with a
// driver.PanicError, for a server and for a cluster URL, rather than taking
// the program down.
func TestOpenPanic(t *testing.T) {
	defer func(f func(rueidisclient.ClientOption) (rueidisclient.Client, error)) { newRueidisClient = f }(newRueidisClient)
	newRueidisClient = func(rueidisclient.ClientOption) (rueidisclient.Client, error) { panic("NewClient panicked") }
	for _, url := range []string{"redis+rueidis://127.0.0.1:1", "redis+rueidis://127.0.0.1:1?cluster=true"} {
		n, err := Driver{}.Open(url)
		var perr *driver.PanicError
		if !errors.As(err, &perr) {
			t.Errorf("Open(%q) = %v; want a *driver.PanicError", url, err)
		}
		if n != nil {
			n.Close()
		}
	}
}

// closePanicLibrary makes clients whose Close panics (closePanicClient).
type closePanicLibrary struct{ library }

func (l closePanicLibrary) Connect(o *adapterkit.ClientOptions) (rueidisclient.Client, error) {
	c, err := l.library.Connect(o)
	if err != nil {
		return nil, err
	}
	return closePanicClient{c}, nil
}

// closePanicClient is a client whose Close, and its dedicated connections'
// Close, close and then panic, as a buggy wrapper of the user's might; so do
// the clients of its cluster's nodes.
type closePanicClient struct{ rueidisclient.Client }

func (c closePanicClient) Close() {
	c.Client.Close()
	panic("client close panicked")
}

func (c closePanicClient) Dedicate() (rueidisclient.DedicatedClient, func()) {
	dc, cancel := c.Client.Dedicate()
	return closePanicDedicated{dc}, cancel
}

func (c closePanicClient) Nodes() map[string]rueidisclient.Client {
	nodes := c.Client.Nodes()
	for addr, nc := range nodes {
		nodes[addr] = closePanicClient{nc}
	}
	return nodes
}

type closePanicDedicated struct{ rueidisclient.DedicatedClient }

func (dc closePanicDedicated) Close() {
	dc.DedicatedClient.Close()
	panic("dedicated close panicked")
}

// TestClosePanic checks that a panic closing a client the node made, or a
// subscription's connections, fails that Close with a driver.PanicError,
// and leaves the subscription refusing requests rather than locked.
func TestClosePanic(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	newClient := func(addrs ...string) rueidisclient.Client {
		c, err := rueidisclient.NewClient(rueidisclient.ClientOption{InitAddress: addrs, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var perr *driver.PanicError

	owned, err := adapterkit.OpenPipelined[rueidisclient.Client, rueidisclient.DedicatedClient](closePanicLibrary{}, "redis+rueidis://"+s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := owned.Close(); !errors.As(err, &perr) {
		t.Errorf("Close of a node owning its client = %v; want a *driver.PanicError", err)
	}

	c := newClient(s.Addr())
	defer c.Close()
	sub, err := NewNode(closePanicClient{c}).(driver.Subscriber).Subscribe(ctx, nopHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Subscribe(ctx, "ch"); err != nil {
		t.Fatal(err)
	}
	if err := sub.Close(); !errors.As(err, &perr) {
		t.Errorf("Subscription.Close = %v; want a *driver.PanicError", err)
	}
	if err := sub.Subscribe(ctx, "ch"); !errors.Is(err, adapterkit.ErrSubscriptionClosed) {
		t.Errorf("Subscription.Subscribe after Close = %v; want %v", err, adapterkit.ErrSubscriptionClosed)
	}

	rc := redistest.StartRedisCluster(t)
	cc := newClient(rc.Addrs()...)
	defer cc.Close()
	sharded, err := NewNode(closePanicClient{cc}).(driver.Subscriber).Subscribe(ctx, nopHandler{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sharded.Subscribe(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := sharded.Close(); !errors.As(err, &perr) {
		t.Errorf("sharded Subscription.Close = %v; want a *driver.PanicError", err)
	}
}

type nopHandler struct{}

func (nopHandler) Message(string, string) {}
func (nopHandler) Subscribed(string)      {}
