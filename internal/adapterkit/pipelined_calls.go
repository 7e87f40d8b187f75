package adapterkit

import (
	"context"
	"errors"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Eval runs s by EVALSHA and, when the server does not have it cached, by
// EVAL, and normalizes the reply as package driver documents.
func (n *Pipelined[C, D]) Eval(ctx context.Context, s *driver.Script, keys []string, args []string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	if n.healthy() {
		if v, err := n.eval(ctx, n.callContext(ctx), c, s, keys, args); !errors.Is(err, errDialOnCaller) {
			return v, err
		}
	}
	return n.guarded(ctx, func(ctx, lctx context.Context) (any, error) { return n.eval(ctx, lctx, c, s, keys, args) })
}

// eval and the other calls below run a call within ctx, handing the client
// lctx (see guarded).
func (n *Pipelined[C, D]) eval(ctx, lctx context.Context, c C, s *driver.Script, keys, args []string) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	if !n.gate.Enter() {
		return nil, n.errs.closed
	}
	defer n.gate.Leave()
	v, err := n.lib.Eval(lctx, c, s, keys, args, false)
	if driver.IsNoScript(err) {
		v, err = n.lib.Eval(lctx, c, s, keys, args, true)
	}
	return n.answered(ctx, v, err)
}

// SetNXGet sends SET key value NX GET PX ms, as [driver.Setter] documents.
func (n *Pipelined[C, D]) SetNXGet(ctx context.Context, key, val, ms string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	if n.healthy() {
		if v, err := n.setNXGet(ctx, n.callContext(ctx), c, key, val, ms); !errors.Is(err, errDialOnCaller) {
			return v, err
		}
	}
	return n.guarded(ctx, func(ctx, lctx context.Context) (any, error) { return n.setNXGet(ctx, lctx, c, key, val, ms) })
}

func (n *Pipelined[C, D]) setNXGet(ctx, lctx context.Context, c C, key, val, ms string) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	if !n.gate.Enter() {
		return nil, n.errs.closed
	}
	defer n.gate.Leave()
	v, err := n.lib.SetNXGet(lctx, c, key, val, ms)
	return n.answered(ctx, v, err)
}

// Ping sends PING.
func (n *Pipelined[C, D]) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := n.client(ctx)
	if err != nil {
		return err
	}
	if n.healthy() {
		if _, err = n.ping(ctx, n.callContext(ctx), c); !errors.Is(err, errDialOnCaller) {
			return err
		}
	}
	_, err = n.guarded(ctx, func(ctx, lctx context.Context) (any, error) { return n.ping(ctx, lctx, c) })
	return err
}

func (n *Pipelined[C, D]) ping(ctx, lctx context.Context, c C) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	if !n.gate.Enter() {
		return nil, n.errs.closed
	}
	defer n.gate.Leave()
	v, err := n.lib.Do(lctx, c, "PING")
	return n.answered(ctx, v, err)
}

// EvalAck runs s as Eval does and then WAIT replicas timeout on a dedicated
// connection, so that WAIT counts the replicas that have the script's
// writes. On a cluster client the connection is to the master of the keys'
// slot.
func (n *Pipelined[C, D]) EvalAck(ctx context.Context, s *driver.Script, keys, args []string, replicas int, timeout time.Duration) (any, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	c, err := n.client(ctx)
	if err != nil {
		return nil, 0, err
	}
	call := func(ctx, lctx context.Context) (any, error) {
		return n.evalAck(ctx, lctx, c, s, keys, args, replicas, timeout)
	}
	var v any
	direct := n.healthy()
	if direct {
		v, err = call(ctx, n.callContext(ctx))
	}
	if !direct || errors.Is(err, errDialOnCaller) {
		v, err = n.guarded(ctx, call)
	}
	if err != nil {
		return nil, 0, err
	}
	r := v.(Ack)
	return r.V, r.Acked, nil
}

// Ack is the result of a script run with EvalAck: its reply, and the
// number of replicas WAIT counted.
type Ack struct {
	V     any
	Acked int64
}

func (n *Pipelined[C, D]) evalAck(ctx, lctx context.Context, c C, s *driver.Script, keys, args []string, replicas int, timeout time.Duration) (_ any, err error) {
	defer n.panics().RecoverTo(&err)
	if !n.gate.Enter() {
		return nil, n.errs.closed
	}
	defer n.gate.Leave()
	var out Ack
	err = n.lib.Dedicated(c, func(d D) error {
		v, err := n.lib.EvalOn(lctx, d, s, keys, args, false)
		if driver.IsNoScript(err) {
			v, err = n.lib.EvalOn(lctx, d, s, keys, args, true)
		}
		if err != nil {
			return err
		}
		acked, err := n.lib.Wait(lctx, d, replicas, timeout)
		out = Ack{v, acked}
		return err
	})
	return n.answered(ctx, out, err)
}

// answered returns what a call within ctx got: its value, or an error
// reply as it is, or, for a call that got no reply, the error made fit by
// ctxError (errDialOnCaller as it is: the call goes on as guarded). It
// records whether the server answered (guard.go).
func (n *Pipelined[C, D]) answered(ctx context.Context, v any, err error) (any, error) {
	if errors.Is(err, errDialOnCaller) {
		return nil, err
	}
	if err != nil && !n.isReply(err) {
		n.sawFailure(ctx)
		return nil, n.ctxError(ctx, err)
	}
	n.sawReply()
	if err != nil {
		return nil, err
	}
	return v, nil
}

// callContext returns the context to hand the client.
func (n *Pipelined[C, D]) callContext(ctx context.Context) context.Context {
	if n.hideDeadline {
		if _, ok := ctx.Deadline(); ok {
			return noDeadline{ctx}
		}
	}
	return ctx
}
