package rueidis

import (
	"context"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
)

var _ driver.ReplicaAcker = (*node)(nil)

// EvalAck runs s as Eval does and then WAIT replicas timeout on a dedicated
// connection (rueidis' Dedicated), so that WAIT counts the replicas that
// have the script's writes. On a cluster client the connection is to the
// master of the keys' slot.
func (n *node) EvalAck(ctx context.Context, s *driver.Script, keys, args []string, replicas int, timeout time.Duration) (any, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	c, err := n.client(ctx)
	if err != nil {
		return nil, 0, ctxError(ctx, err)
	}
	call := func() (any, error) { return n.evalAck(ctx, c, s, keys, args, replicas, timeout) }
	var v any
	if n.healthy() {
		v, err = call()
	} else {
		v, err = n.guarded(ctx, call)
	}
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

func (n *node) evalAck(ctx context.Context, c rueidisclient.Client, s *driver.Script, keys, args []string, replicas int, timeout time.Duration) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	n.calls.RLock()
	defer n.calls.RUnlock()
	if n.closed.Load() {
		return nil, errClosed
	}
	dctx := n.callContext(ctx)
	numkeys := int64(len(keys))
	var out ackResult
	err = c.Dedicated(func(dc rueidisclient.DedicatedClient) error {
		res := dc.Do(dctx, dc.B().Evalsha().Sha1(s.Hash).Numkeys(numkeys).Key(keys...).Arg(args...).Build())
		if err := res.Error(); err != nil && res.NonRedisError() == nil && driver.IsNoScript(err) {
			res = dc.Do(dctx, dc.B().Eval().Script(s.Source).Numkeys(numkeys).Key(keys...).Arg(args...).Build())
		}
		if err := res.NonRedisError(); err != nil {
			return err
		}
		msg, _ := res.ToMessage()
		v, err := normalize(&msg)
		if err != nil {
			return err
		}
		w := dc.Do(dctx, dc.B().Wait().Numreplicas(int64(replicas)).Timeout(timeout.Milliseconds()).Build())
		acked, err := w.AsInt64()
		if err != nil {
			return err
		}
		out = ackResult{v, acked}
		return nil
	})
	if err != nil {
		if _, reply := rueidisclient.IsRedisErr(err); !reply {
			n.sawFailure(ctx)
			return nil, ctxError(ctx, err)
		}
		return nil, err
	}
	n.sawReply()
	return out, nil
}
