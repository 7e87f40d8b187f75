package goredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
)

// newClient makes the client a node URL describes: a [redis.Client] for one
// server, a [redis.ClusterClient] for cluster=true, a failover client
// ([redis.NewFailoverClient]) for sentinel_master=NAME.
func newClient(cfg *driver.Config) redis.UniversalClient {
	switch {
	case cfg.Cluster:
		return redis.NewClusterClient(clusterOptions(cfg))
	case cfg.SentinelMaster != "":
		return redis.NewFailoverClient(failoverOptions(cfg))
	}
	return redis.NewClient(clientOptions(cfg))
}

// clusterOptions are the options of clientOptions for a ClusterClient over
// the URL's seed addresses, one dial with no retry among them.
func clusterOptions(cfg *driver.Config) *redis.ClusterOptions {
	o := clientOptions(cfg)
	co := &redis.ClusterOptions{
		Addrs: cfg.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
		Dialer: o.Dialer, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize, MaxRetries: o.MaxRetries, ContextTimeoutEnabled: o.ContextTimeoutEnabled,
		// A MOVED or ASK reply (slots moving between masters) is
		// followed within the call: it is no failure of the node.
		MaxRedirects: 3,
	}
	dialOnce(co)
	return co
}

// failoverOptions are the options of clientOptions for a failover client
// through the URL's Sentinels, one dial with no retry among them. The
// Sentinels are reached without a password (driver.Config); the master with
// the URL's user and password.
func failoverOptions(cfg *driver.Config) *redis.FailoverOptions {
	o := clientOptions(cfg)
	fo := &redis.FailoverOptions{
		MasterName: cfg.SentinelMaster, SentinelAddrs: cfg.Addrs,
		Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
		Dialer: o.Dialer, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize, MaxRetries: o.MaxRetries, ContextTimeoutEnabled: o.ContextTimeoutEnabled,
	}
	dialOnce(fo)
	return fo
}
