package adapterkit

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// ClientOptions are the settings of a node URL in the terms of a
// [Library]'s client options, which the library copies into its own. A
// library also turns client-side caching off (a lock never reads through a
// cache, and a server without it, Redis before 6, then works too) and
// pipelines every call: rueidis sends a lone request on the caller's
// goroutine with the context's deadline as the socket deadline, and in that
// mode a context cancelled before its deadline is not seen. Always
// pipelining makes every call wait on the context.
//
// read_timeout has no counterpart: the context bounds every reply.
// pool_size is ignored: these clients pipeline concurrent calls over a few
// shared connections instead of keeping a pool.
type ClientOptions struct {
	// InitAddress is the server's address; for a cluster the seed
	// addresses, for Sentinel the Sentinels'.
	InitAddress []string
	// Username and Password authenticate to the server (never to the
	// Sentinels, see [driver.Config]).
	Username, Password string
	DB                 int
	TLS                *tls.Config
	// Dialer bounds the dial and the handshake by the dial timeout.
	Dialer net.Dialer
	// WriteTimeout, from write_timeout, bounds socket writes and the PING
	// the client sends on idle connections, which is how a server that
	// stopped answering is noticed.
	WriteTimeout time.Duration
	// Cluster asks for a client in cluster mode. Otherwise the client is
	// one server's (ForceSingleClient): the library would otherwise send
	// CLUSTER SLOTS first and guess from the reply.
	Cluster bool
	// SentinelMaster is the master set the Sentinels are asked for, with
	// TLS and Dialer as for the master.
	SentinelMaster string
	// DialFn dials every connection of the client, so that the node's
	// Close can close them (see [Pipelined.Close]), and so that a
	// connection a call starts is made to its end (see [Pipelined.Eval]).
	// ctx is the one the library dials within.
	DialFn func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error)
}

// NewClientOptions translates a node URL, as [OpenPipelined] does.
func NewClientOptions(cfg *driver.Config) *ClientOptions {
	o := &ClientOptions{
		InitAddress: []string{cfg.Addr}, Username: cfg.Username, Password: cfg.Password, DB: cfg.DB, TLS: cfg.TLS,
		Dialer: net.Dialer{Timeout: cfg.DialTimeout}, WriteTimeout: cfg.WriteTimeout,
		Cluster: cfg.Cluster, SentinelMaster: cfg.SentinelMaster,
	}
	if cfg.Cluster || cfg.SentinelMaster != "" {
		o.InitAddress = cfg.Addrs
	}
	return o
}
