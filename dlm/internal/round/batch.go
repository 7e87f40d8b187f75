package round

import (
	"context"
	"fmt"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// A batch is one request to one node that carries several entries, each
// with a reply of its own: the extension of many locks held on the node
// ([script.ExtendBatch]). The caller sends a batch of the same entries to
// each node, and counts each entry's vote itself, from the replies of
// the batches that carried it (see [Vote.Count] and [Vote.Settled]): a
// quorum round per entry, whose requests share their round trips with the
// other entries'.

// BatchReply is one node's answer to a batch.
type BatchReply struct {
	Node int
	// Yes holds each entry's answer, in the request's order: true when the
	// entry's reply was the request's Want. It is nil when Err is set.
	Yes []bool
	// Err is the node's failure, wrapped as the round wraps it: the batch
	// failed for every entry, whether the node applied it or not.
	Err error
}

// Reply returns entry e's reply, as a [Reply] of one request to the node.
func (b *BatchReply) Reply(e int) Reply {
	if b.Err != nil {
		return Reply{Node: b.Node, Err: b.Err}
	}
	return Reply{Node: b.Node, Yes: b.Yes[e]}
}

// Batch sends req, whose script answers each of its req.Entries entries
// on its own ([script.Shape] Entries), to node i alone, and calls done with
// the node's answer on the goroutine that sent it, one of the pool's
// workers. ctx bounds the request; the caller ends it only after done was
// called (a context of [driver.WithNodeDeadline] under the request's
// timeout, which Batch does not add). The reply is untrusted: anything but
// an array of req.Entries integers, each 0 or more, fails the batch on
// that node.
func (r *Round) Batch(ctx context.Context, i int, req *Request, done func(BatchReply)) {
	r.pool.run(func() { done(r.askBatch(ctx, i, req)) })
}

// askBatch runs the batch req on node i within ctx and reads its reply.
func (r *Round) askBatch(ctx context.Context, i int, req *Request) BatchReply {
	res, err := r.calls[i](ctx, req)
	if err != nil {
		return BatchReply{Node: i, Err: r.nodeErr(i, err)}
	}
	yes, err := entries(res, req)
	if err != nil {
		return BatchReply{Node: i, Err: r.nodeErr(i, err)}
	}
	return BatchReply{Node: i, Yes: yes}
}

// entries reads a batch's reply: one integer per entry of req, each 0 or
// more, an entry's yes when it is req.Want.
func entries(res any, req *Request) ([]bool, error) {
	if !script.ShapeOf(req.Script).Entries {
		return nil, fmt.Errorf("%s script: not a batch", req.Op)
	}
	arr, ok := res.([]any)
	switch {
	case !ok:
		return nil, fmt.Errorf("%s script: unexpected reply of type %T (%d entries sent)", req.Op, res, req.Entries)
	case len(arr) != req.Entries:
		return nil, fmt.Errorf("%s script: %d replies for %d entries sent", req.Op, len(arr), req.Entries)
	}
	yes := make([]bool, len(arr))
	for e, v := range arr {
		n, ok := v.(int64)
		if !ok || n < 0 {
			return nil, fmt.Errorf("%s script: entry %d of %d: unexpected reply %v", req.Op, e+1, len(arr), shown(v))
		}
		yes[e] = n == req.Want
	}
	return yes, nil
}

// shown is a reply's element in an error: its type, and its value when it
// is a number, never a string of the node's, which could be of any size.
func shown(v any) string {
	if n, ok := v.(int64); ok {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("of type %T", v)
}
