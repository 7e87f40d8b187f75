package rueidis

import (
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm/driver"
)

// NewClusterNode is newClusterNode for the tests outside the package.
func NewClusterNode(addrs []string) (driver.Node, error) {
	return newClusterNode(rueidisclient.ClientOption{
		InitAddress: addrs, DisableCache: true, AlwaysPipelining: true, ConnWriteTimeout: 5 * time.Second,
	}, 5*time.Second)
}
