package rueidis

import (
	"context"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// library is rueidis as the node ([adapterkit.Pipelined]) calls it, which
// guards each call: a panic inside rueidis fails the call on this node,
// never takes the program down. rueidis panics by design on some misuses:
// its command builder, on a cluster client, panics on a command whose keys
// hash to different slots ("multi key command with different key slots are
// not allowed").
type library struct{}

var lib adapterkit.Library[rueidisclient.Client, rueidisclient.DedicatedClient] = library{}

func (library) Name() string { return Name }

func (library) Connect(o *adapterkit.ClientOptions) (rueidisclient.Client, error) {
	return newRueidisClient(clientOption(o))
}

func (library) Close(c rueidisclient.Client) { c.Close() }

func (library) Nodes(c rueidisclient.Client) map[string]rueidisclient.Client { return c.Nodes() }

// IsCluster reports whether c is in cluster mode. rueidis does not say so,
// but its cluster clients' command builder refuses keys of different
// slots, by a panic: build, never send, a command over keys "a" (slot
// 15495) and "b" (slot 3300) and see.
func (library) IsCluster(c rueidisclient.Client) (cluster bool) {
	defer func() {
		if recover() != nil {
			cluster = true
		}
	}()
	c.B().Mget().Key("a", "b").Build()
	return false
}

func (library) Eval(ctx context.Context, c rueidisclient.Client, s *driver.Script, keys, args []string, source bool) (any, error) {
	return eval(ctx, c, s, keys, args, source)
}

func (library) EvalOn(ctx context.Context, d rueidisclient.DedicatedClient, s *driver.Script, keys, args []string, source bool) (any, error) {
	return eval(ctx, d, s, keys, args, source)
}

func eval(ctx context.Context, c rueidisclient.CommandClient, s *driver.Script, keys, args []string, source bool) (any, error) {
	if source {
		return reply(c.Do(ctx, c.B().Eval().Script(s.Source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()))
	}
	return reply(c.Do(ctx, c.B().Evalsha().Sha1(s.Hash).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()))
}

func (library) SetNXGet(ctx context.Context, c rueidisclient.Client, key, val, ms string) (any, error) {
	return reply(c.Do(ctx, c.B().Arbitrary("SET").Keys(key).Args(val, "NX", "GET", "PX", ms).Build()))
}

func (library) Do(ctx context.Context, c rueidisclient.Client, args ...string) (any, error) {
	return reply(c.Do(ctx, c.B().Arbitrary(args...).Build()))
}

func (library) Dedicated(c rueidisclient.Client, f func(rueidisclient.DedicatedClient) error) error {
	return c.Dedicated(f)
}

func (library) Wait(ctx context.Context, d rueidisclient.DedicatedClient, replicas int, timeout time.Duration) (int64, error) {
	return d.Do(ctx, d.B().Wait().Numreplicas(int64(replicas)).Timeout(timeout.Milliseconds()).Build()).AsInt64()
}

func (library) Dedicate(c rueidisclient.Client, h driver.PubSubHandler, kind string) (rueidisclient.DedicatedClient, <-chan error) {
	dc, _ := c.Dedicate() // its Close releases the connection
	return dc, dc.SetPubSubHooks(rueidisclient.PubSubHooks{
		OnMessage: func(m rueidisclient.PubSubMessage) { h.Message(m.Channel, m.Message) },
		OnSubscription: func(s rueidisclient.PubSubSubscription) {
			if s.Kind == kind {
				h.Subscribed(s.Channel)
			}
		},
	})
}

func (library) PubSub(ctx context.Context, d rueidisclient.DedicatedClient, cmd string, channels ...string) error {
	b := d.B()
	var c rueidisclient.Completed
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

func (library) CloseDedicated(d rueidisclient.DedicatedClient) { d.Close() }

// ReplyError finds a [rueidisclient.RedisError], which drops a leading
// "ERR " from the server's text (adapterkit.Normalize keeps it whole).
func (library) ReplyError(err error) error { return adapterkit.Find[*rueidisclient.RedisError](err) }

var messages adapterkit.Messages[rueidisclient.RedisMessage, *rueidisclient.RedisMessage]

// reply returns res's reply normalized, or the error that kept it from
// the server.
func reply(res rueidisclient.RedisResult) (any, error) {
	if err := res.NonRedisError(); err != nil {
		return nil, err
	}
	msg, _ := res.ToMessage()
	return messages.Normalize(msg)
}
