package goredis

import (
	"context"
	"fmt"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// A [redis.Ring] is refused as a node. It spreads keys over its shards by
// its own hashing, and when it marks a shard down (a few failed heartbeats,
// which a network blip is enough for) it sends that shard's keys to the
// others: a lock key held on the shard that went quiet is then free on
// another one, and a second client obtains the lock on the same node while
// the first still holds it. Refusing multi-key locks, as on a Redis Cluster
// node, would not help, since a single key moves as well. Give each shard
// as a node of its own, or run a Redis Cluster ([redis.ClusterClient]).

// errRing is the failure of every call on a node made from a Ring.
var errRing = fmt.Errorf("%w: goredis: a *redis.Ring cannot be a lock node: it moves keys to other shards when it marks one down, "+
	"where a second client can take a lock the first still holds; give each shard as a node of its own, or use a Redis Cluster (redis.ClusterClient)",
	dlm.ErrInvalid)

// ringNode is what NewNode returns for a Ring: every call fails with
// errRing, which package dlm reports as [dlm.ErrInvalid] without retrying.
type ringNode struct{}

var (
	_ driver.Node         = ringNode{}
	_ driver.Pinger       = ringNode{}
	_ driver.ReplicaAcker = ringNode{}
)

func (ringNode) Addr() string               { return Name + "-ring" }
func (ringNode) Close() error               { return nil }
func (ringNode) Ping(context.Context) error { return errRing }
func (ringNode) Eval(context.Context, *driver.Script, []string, []string) (any, error) {
	return nil, errRing
}

func (ringNode) EvalAck(context.Context, *driver.Script, []string, []string, int, time.Duration) (any, int64, error) {
	return nil, 0, errRing
}
