package goredis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
	"github.com/dlmgo/redlock/internal/evalargs"
)

var _ driver.ReplicaAcker = (*node)(nil)

// EvalAck runs s as Eval does and then WAIT replicas timeout in one
// pipeline, which go-redis sends on one connection, so that WAIT counts the
// replicas that have the script's writes. On a ClusterClient the pipeline
// goes straight to the master the client's map of slots names for the first
// key, so go-redis does not follow a MOVED or ASK reply there as it does for
// Eval: when the slot has moved (a resharding, a failover the map has not
// caught up with), EvalAck fails with an error that says so and wraps the
// reply, and has the client reload the map for the next attempt.
func (n *node) EvalAck(ctx context.Context, s *driver.Script, keys, args []string, replicas int, timeout time.Duration) (any, int64, error) {
	v, err := n.wait(ctx, n.safe(func(ctx context.Context) (any, error) {
		c := n.client
		cc, _ := c.(*redis.ClusterClient)
		var master *redis.Client // the client's choice on a ClusterClient
		if cc != nil && len(keys) > 0 {
			m, err := cc.MasterForKey(ctx, keys[0])
			if err != nil {
				return nil, err
			}
			c, master = m, m
		}
		cmd := evalargs.Command([]any{"evalsha"}, s, keys, args)
		run := func() (*redis.Cmd, *redis.Cmd) {
			pipe := c.Pipeline()
			ev := pipe.Do(ctx, cmd...)
			w := pipe.Do(ctx, "wait", replicas, timeout.Milliseconds())
			_, _ = pipe.Exec(ctx)
			return ev, w
		}
		ev, w := run()
		if driver.IsNoScript(ev.Err()) {
			cmd[0], cmd[1] = "eval", s.Source
			ev, w = run()
		}
		v, err := normalize(ev.Result())
		if master != nil && redirected(err) {
			cc.ReloadState(ctx)
			return nil, fmt.Errorf("goredis: replica ack: the slot of %q is no longer served by %s, where the cluster's map of slots sent it (%w); "+
				"the map is reloaded for the next attempt", keys[0], master.Options().Addr, err)
		}
		if err != nil {
			return nil, err
		}
		acked, err := w.Int64()
		if err != nil {
			return nil, err
		}
		return adapterkit.Ack{V: v, Acked: acked}, nil
	}))
	if err != nil {
		return nil, 0, err
	}
	r := v.(adapterkit.Ack)
	return r.V, r.Acked, nil
}

// redirected reports whether err is a MOVED or ASK reply.
func redirected(err error) bool {
	if !isReply(err) {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}
