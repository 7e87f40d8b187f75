package redigo

import (
	"errors"
	"fmt"

	"github.com/dlmgo/redlock/dlm/driver"
)

// ErrUnsupported is wrapped by the error [Driver.Open] returns for a URL
// naming a Redis Cluster (cluster=true) or a master found through Sentinel
// (sentinel_master): redigo has a client for one server only. Open such
// nodes with redis+goredis:// or redis+rueidis://. A redigo node is one
// server: a master of its own, or the master of a Sentinel group reached at
// a fixed address (a proxy or a virtual IP that follows failovers).
var ErrUnsupported = errors.New("redigo: not supported")

// supported refuses the topologies redigo has no client for.
func supported(cfg *driver.Config) error {
	switch {
	case cfg.Cluster:
		return fmt.Errorf("%w: %s is a Redis Cluster (cluster=true), and redigo has no cluster client; "+
			"open it with redis+goredis:// or redis+rueidis://", ErrUnsupported, cfg.Name())
	case cfg.SentinelMaster != "":
		return fmt.Errorf("%w: %s is found through Sentinel (sentinel_master), and redigo has no Sentinel client; "+
			"open it with redis+goredis:// or redis+rueidis://", ErrUnsupported, cfg.Name())
	}
	return nil
}
