package goredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
)

// newClient makes the client a node URL describes: a [redis.Client] for one
// server, a [redis.ClusterClient] for cluster=true, a failover client
// ([redis.NewFailoverClient]) for sentinel_master=NAME. The options are
// those of clientOptions, with the seed or Sentinel addresses from the URL.
func newClient(cfg *driver.Config) redis.UniversalClient {
	o := clientOptions(cfg)
	switch {
	case cfg.Cluster:
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cfg.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
			Dialer: o.Dialer, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolSize: o.PoolSize, MaxRetries: o.MaxRetries, ContextTimeoutEnabled: o.ContextTimeoutEnabled,
			// A MOVED or ASK reply (slots moving between masters) is
			// followed within the call: it is no failure of the node.
			MaxRedirects: 3,
		})
	case cfg.SentinelMaster != "":
		// The Sentinels are reached without a password (driver.Config);
		// the master with the URL's user and password.
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: cfg.SentinelMaster, SentinelAddrs: cfg.Addrs,
			Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
			Dialer: o.Dialer, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolSize: o.PoolSize, MaxRetries: o.MaxRetries, ContextTimeoutEnabled: o.ContextTimeoutEnabled,
		})
	}
	return redis.NewClient(o)
}
