package goredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
)

var _ driver.ReplicaAcker = (*node)(nil)

// EvalAck runs s as Eval does and then WAIT replicas timeout in one
// pipeline, which go-redis sends on one connection, so that WAIT counts the
// replicas that have the script's writes. On a ClusterClient the pipeline
// goes to the master of the first key's slot.
func (n *node) EvalAck(ctx context.Context, s *driver.Script, keys, args []string, replicas int, timeout time.Duration) (any, int64, error) {
	v, err := n.wait(ctx, n.safe(func(ctx context.Context) (any, error) {
		c := n.client
		if cc, ok := c.(*redis.ClusterClient); ok && len(keys) > 0 {
			m, err := cc.MasterForKey(ctx, keys[0])
			if err != nil {
				return nil, err
			}
			c = m
		}
		cmd := evalCmd(s, keys, args)
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
		if err != nil {
			return nil, err
		}
		acked, err := w.Int64()
		if err != nil {
			return nil, err
		}
		return ackResult{v, acked}, nil
	}))
	if err != nil {
		return nil, 0, err
	}
	r := v.(ackResult)
	return r.v, r.acked, nil
}

type ackResult struct {
	v     any
	acked int64
}
