package valkeygo

import (
	"context"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// library is valkey-go as the node ([adapterkit.Pipelined]) calls it, which
// guards each call: a panic inside valkey-go, such as its command builder's
// on a cluster client for a command whose keys hash to different slots,
// fails the call on this node and never takes the program down.
type library struct{}

var lib adapterkit.Library[valkey.Client, valkey.DedicatedClient] = library{}

func (library) Name() string { return Name }

func (library) Connect(o *adapterkit.ClientOptions) (valkey.Client, error) {
	return newValkeyClient(clientOption(o))
}

func (library) Close(c valkey.Client) { c.Close() }

func (library) Nodes(c valkey.Client) map[string]valkey.Client { return c.Nodes() }

// IsCluster reports whether c is in cluster mode, which the command
// builder of a cluster client tells by a panic on keys of two slots: build,
// never send, a command over keys "a" (slot 15495) and "b" (slot 3300).
func (library) IsCluster(c valkey.Client) (cluster bool) {
	defer func() {
		if recover() != nil {
			cluster = true
		}
	}()
	c.B().Mget().Key("a", "b").Build()
	return false
}

func (library) Eval(ctx context.Context, c valkey.Client, s *driver.Script, keys, args []string, source bool) (any, error) {
	return eval(ctx, c, s, keys, args, source)
}

func (library) EvalOn(ctx context.Context, d valkey.DedicatedClient, s *driver.Script, keys, args []string, source bool) (any, error) {
	return eval(ctx, d, s, keys, args, source)
}

func eval(ctx context.Context, c valkey.CommandClient, s *driver.Script, keys, args []string, source bool) (any, error) {
	if source {
		return reply(c.Do(ctx, c.B().Eval().Script(s.Source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()))
	}
	return reply(c.Do(ctx, c.B().Evalsha().Sha1(s.Hash).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()))
}

func (library) SetNXGet(ctx context.Context, c valkey.Client, key, val, ms string) (any, error) {
	return reply(c.Do(ctx, c.B().Arbitrary("SET").Keys(key).Args(val, "NX", "GET", "PX", ms).Build()))
}

func (library) Do(ctx context.Context, c valkey.Client, args ...string) (any, error) {
	return reply(c.Do(ctx, c.B().Arbitrary(args...).Build()))
}

func (library) Dedicated(c valkey.Client, f func(valkey.DedicatedClient) error) error {
	return c.Dedicated(f)
}

func (library) Wait(ctx context.Context, d valkey.DedicatedClient, replicas int, timeout time.Duration) (int64, error) {
	return d.Do(ctx, d.B().Wait().Numreplicas(int64(replicas)).Timeout(timeout.Milliseconds()).Build()).AsInt64()
}

func (library) Dedicate(c valkey.Client, h driver.PubSubHandler, kind string) (valkey.DedicatedClient, <-chan error) {
	dc, _ := c.Dedicate() // its Close releases the connection
	return dc, dc.SetPubSubHooks(valkey.PubSubHooks{
		OnMessage: func(m valkey.PubSubMessage) { h.Message(m.Channel, m.Message) },
		OnSubscription: func(s valkey.PubSubSubscription) {
			if s.Kind == kind {
				h.Subscribed(s.Channel)
			}
		},
	})
}

func (library) PubSub(ctx context.Context, d valkey.DedicatedClient, cmd string, channels ...string) error {
	b := d.B()
	var c valkey.Completed
	switch cmd {
	case "SUBSCRIBE":
		c = b.Subscribe().Channel(channels...).Build()
	case "UNSUBSCRIBE":
		c = b.Unsubscribe().Channel(channels...).Build()
	case "SSUBSCRIBE":
		c = b.Ssubscribe().Channel(channels...).Build()
	default:
		c = b.Sunsubscribe().Channel(channels...).Build()
	}
	return d.Do(ctx, c).Error()
}

func (library) CloseDedicated(d valkey.DedicatedClient) { d.Close() }

// ReplyError finds a [valkey.ValkeyError], whose text lacks the server's
// leading "ERR " (adapterkit.Normalize keeps it whole).
func (library) ReplyError(err error) error { return adapterkit.Find[*valkey.ValkeyError](err) }

var messages adapterkit.Messages[valkey.ValkeyMessage, *valkey.ValkeyMessage]

// reply returns res's reply normalized, or the error that kept it from
// the server.
func reply(res valkey.ValkeyResult) (any, error) {
	if err := res.NonValkeyError(); err != nil {
		return nil, err
	}
	msg, _ := res.ToMessage()
	return messages.Normalize(msg)
}
