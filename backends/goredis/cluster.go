package goredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
)

var _ driver.Sharded = (*node)(nil)

// Sharded reports whether the node's client is a [redis.ClusterClient]:
// package dlm then refuses, up front, locks over keys of several hash
// slots.
func (n *node) Sharded() bool {
	_, ok := n.client.(*redis.ClusterClient)
	return ok
}
