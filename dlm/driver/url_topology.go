package driver

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Topology parameters: a node URL may name a whole Redis Cluster or a
// master found through Sentinel instead of one server, as one lock node.
//
//	redis+goredis://HOST:PORT?cluster=true&addr=HOST2:PORT2&addr=HOST3:PORT3
//	redis+goredis://SENTINEL:26379?sentinel_master=mymaster&addr=SENTINEL2:26379
//
// The extra addresses are given as addr parameters, as go-redis'
// ParseClusterURL takes them. In a Sentinel URL the host and the addr
// parameters are the Sentinels', and the user information and database are
// the master's; the Sentinels are reached without a password.

// applyTopology reads the topology parameters.
func (c *Config) applyTopology(q url.Values) error {
	if v := q.Get("cluster"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("cluster: want true or false")
		}
		c.Cluster = on
	}
	c.SentinelMaster = q.Get("sentinel_master")
	if _, set := q["sentinel_master"]; set && c.SentinelMaster == "" {
		return errors.New("sentinel_master is empty: want the name of the master set the Sentinels monitor")
	}
	extra := q["addr"]
	switch {
	case c.Cluster && c.SentinelMaster != "":
		return errors.New("cluster and sentinel_master exclude each other: a node is a Redis Cluster or a master found through Sentinel")
	case c.Cluster && c.DB != 0:
		return errors.New("a Redis Cluster has database 0 only: give no database")
	case len(extra) > 0 && !c.Cluster && c.SentinelMaster == "":
		return errors.New("addr names more servers of one node: it needs cluster=true or sentinel_master=NAME; for independent masters give one URL each")
	case !c.Cluster && c.SentinelMaster == "":
		return nil
	}
	c.Addrs = []string{c.Addr}
	// The errors number the addr parameters from 1, and show none: a
	// parameter's value may repeat a password.
	for i, a := range extra {
		hp, err := hostPort(a)
		if err != nil {
			return fmt.Errorf("addr parameter %d: %v", i+1, err)
		}
		if slices.Contains(c.Addrs, hp) {
			return fmt.Errorf("addr parameter %d: an address given twice", i+1)
		}
		c.Addrs = append(c.Addrs, hp)
	}
	slices.Sort(c.Addrs)
	return nil
}

// Name names the node in errors and logs, and tells nodes apart: Addr for
// one server; the seed addresses, sorted and joined by commas, for a Redis
// Cluster (as the adapters' NewNode names a cluster client); the master set's
// name, "@" and the Sentinels' addresses for a master found through
// Sentinel. It never holds a password.
func (c *Config) Name() string {
	switch {
	case c.Cluster:
		return strings.Join(c.Addrs, ",")
	case c.SentinelMaster != "":
		return c.SentinelMaster + "@" + strings.Join(c.Addrs, ",")
	}
	return c.Addr
}
