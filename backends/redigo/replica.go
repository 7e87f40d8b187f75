package redigo

import (
	"context"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
	"github.com/dlmgo/redlock/internal/evalargs"
)

var _ driver.ReplicaAcker = (*node)(nil)

// EvalAck runs s as Eval does and then WAIT replicas timeout on the same
// connection, so that WAIT counts the replicas that have the script's
// writes.
func (n *node) EvalAck(ctx context.Context, s *driver.Script, keys, args []string, replicas int, timeout time.Duration) (_ any, acked int64, err error) {
	defer n.panics().RecoverTo(&err)
	c, err := n.conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	cmd := evalargs.Command(nil, s, keys, args)
	v, err := redis.DoContext(c, ctx, "EVALSHA", cmd...)
	if driver.IsNoScript(err) {
		cmd[0] = s.Source
		v, err = redis.DoContext(c, ctx, "EVAL", cmd...)
	}
	if err != nil {
		return nil, 0, n.fail(ctx, err)
	}
	reply, err := adapterkit.Value(Name, v)
	if err != nil {
		return nil, 0, err
	}
	w, err := redis.Int64(redis.DoContext(c, ctx, "WAIT", replicas, timeout.Milliseconds()))
	if err != nil {
		return nil, 0, n.fail(ctx, err)
	}
	return reply, w, nil
}

// conn borrows a connection from the pool within ctx. A connection whose
// request failed is closed rather than given back: redigo marks it broken.
func (n *node) conn(ctx context.Context) (redis.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n.gate.Closed() {
		return nil, errClosed
	}
	c, err := n.pool.GetContext(ctx)
	if err != nil {
		return nil, n.fail(ctx, err)
	}
	return c, nil
}
