package rueidis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// Name is the driver name under which this package registers itself, as it
// appears in "redis+rueidis://" and "rediss+rueidis://" URLs.
const Name = "rueidis"

func init() { dlm.Register(Name, Driver{}) }

// Driver opens nodes backed by a rueidis client. Its zero value is ready to
// use; package dlm uses the one registered under [Name].
type Driver struct{}

var _ driver.Driver = Driver{}

// Open parses url with [driver.ParseURL] and returns a node with a client of
// its own, which the node's Close closes: a client of one server, or for a
// URL with cluster=true a client in cluster mode over the seed addresses,
// or for a URL with sentinel_master=NAME a client that finds the master
// through the Sentinels.
//
// Open connects at once, bounded by the URL's dial timeout (twice over: once
// to dial, once for the handshake), and checks the server with
// [driver.CheckOpen], as every backend does. A server that turns the
// settings down fails Open: an error reply (a wrong password, a user
// without the rights to connect, a database that does not exist, a password
// for a server that has none) or a TLS certificate that does not verify; so
// does a panic in rueidis, as a [driver.PanicError]. A server that cannot
// be reached, does not answer, or answers that it is not ready
// ([driver.Transient]: LOADING, BUSY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN),
// does not: the node connects on first use instead, so a manager can be
// opened while a minority of its nodes is down. Until it connects, Eval
// and Ping return the connection error. Errors never contain the password.
func (Driver) Open(url string) (driver.Node, error) {
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	if cfg.Cluster {
		opt := clientOption(cfg)
		opt.InitAddress = cfg.Addrs
		n, err := newClusterNode(cfg, opt)
		if err != nil {
			return nil, err // not a nil *node in an interface
		}
		return n, nil
	}
	n := &node{
		addr: cfg.Name(), owned: true, opt: clientOption(cfg), conns: &conns{}, closeGrace: cfg.WriteTimeout,
		born: time.Now(), healthyWindow: healthyWindow(cfg),
	}
	if cfg.SentinelMaster != "" {
		// The Sentinels are reached without a password (driver.Config).
		n.opt.InitAddress = cfg.Addrs
		n.opt.Sentinel = rueidisclient.SentinelOption{MasterSet: cfg.SentinelMaster, TLSConfig: cfg.TLS, Dialer: n.opt.Dialer}
	}
	n.opt.DialFn = n.conns.dial
	if err := n.open(cfg); err != nil {
		return nil, err
	}
	return n, nil
}

// open makes the client of a node that Open made, and checks the server
// with [driver.CheckOpen]. It returns the error of a server that turned
// the node's settings down ([adapterkit.Refused]: a connect that fails so,
// wrong password, a user without rights, no such database, a TLS
// certificate that does not verify, a panic of rueidis), having closed the
// node. A server that cannot be reached or is not ready leaves the node to
// connect on first use.
func (n *node) open(cfg *driver.Config) error {
	c, err := n.newClient()
	if err != nil {
		if adapterkit.Refused(err, errorReply) {
			return driver.RedactError(fmt.Errorf("rueidis: connect %s: %w", n.addr, err), cfg.Password)
		}
		return nil // unreachable for now: connect on first use
	}
	n.ref.Store(&clientRef{c})
	n.sawReply()
	do := func(ctx context.Context, args ...string) error { return n.command(ctx, c, args...) }
	return adapterkit.CheckOpen(cfg, Name, n.addr, do, errorReply, n.Close)
}

// command sends args to the server through c, for [driver.CheckOpen].
func (n *node) command(ctx context.Context, c rueidisclient.Client, args ...string) (err error) {
	defer n.panics().RecoverTo(&err)
	res := c.Do(ctx, c.B().Arbitrary(args...).Build())
	if err := res.NonRedisError(); err != nil {
		return driver.RedactError(err, n.opt.Password)
	}
	msg, _ := res.ToMessage()
	_, err = normalize(&msg)
	return err
}

// errorReply returns the text of err when it is an error reply of the
// server. A [replyError] has it whole. rueidis' own [rueidisclient.RedisError],
// which the handshake returns, drops a leading "ERR ", which errorReply puts
// back before a text that does not start with a code in capitals ("max
// number of clients reached"); "ERR DB index is out of range" stays "DB
// index ...", whose classification is the same.
func errorReply(err error) (string, bool) {
	var whole *replyError
	if errors.As(err, &whole) {
		return whole.msg, true
	}
	var reply *rueidisclient.RedisError
	if !errors.As(err, &reply) || reply == nil {
		return "", false
	}
	text := reply.Error()
	if code, _, _ := strings.Cut(text, " "); code == "" || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		text = "ERR " + text
	}
	return text, true
}

// healthyWindow keeps a node on the direct path (guard.go) for half the time
// after which rueidis drops a silent connection.
func healthyWindow(cfg *driver.Config) time.Duration { return cfg.WriteTimeout / 2 }

// clientOption translates a node URL into rueidis options.
//
//   - ForceSingleClient: a node is one master. rueidis would otherwise send
//     CLUSTER SLOTS first and guess from the reply.
//   - DisableCache: locks never use client-side caching, and a server that
//     lacks it (Redis before 6, RESP2) then works too.
//   - AlwaysPipelining: rueidis sends a lone request on the caller's
//     goroutine with the context's deadline as the socket deadline, and in
//     that mode a context cancelled before its deadline is not seen. Always
//     pipelining makes every call wait on the context.
//   - ConnWriteTimeout comes from write_timeout. It bounds socket writes and
//     the PING rueidis sends on idle connections, which is how a node that
//     stopped answering is noticed.
//
// read_timeout has no rueidis counterpart: the context bounds every reply.
// pool_size is ignored: rueidis pipelines concurrent calls over a few shared
// connections (PipelineMultiplex) instead of keeping a pool.
func clientOption(cfg *driver.Config) rueidisclient.ClientOption {
	return rueidisclient.ClientOption{
		InitAddress:       []string{cfg.Addr},
		Username:          cfg.Username,
		Password:          cfg.Password,
		SelectDB:          cfg.DB,
		TLSConfig:         cfg.TLS,
		Dialer:            net.Dialer{Timeout: cfg.DialTimeout},
		ConnWriteTimeout:  cfg.WriteTimeout,
		DisableCache:      true,
		ForceSingleClient: true,
		AlwaysPipelining:  true,
	}
}
