package valkeygo

import (
	"github.com/valkey-io/valkey-go"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// Name is the driver name under which this package registers itself, as it
// appears in "redis+valkey://" and "rediss+valkey://" URLs.
const Name = "valkey"

func init() { dlm.Register(Name, Driver{}) }

// Driver opens nodes backed by a valkey-go client. Its zero value is ready
// to use; package dlm uses the one registered under [Name].
type Driver struct{}

var _ driver.Driver = Driver{}

// Open parses url with [driver.ParseURL] and returns a node with a client of
// its own, which the node's Close closes: a client of one server, or for a
// URL with cluster=true a client in cluster mode over the seed addresses,
// or for a URL with sentinel_master=NAME a client that finds the master
// through the Sentinels.
//
// Open connects at once, within the URL's dial timeout (once to dial, once
// for the handshake), and checks the server with [driver.CheckOpen], as
// every backend does. A server that turns the settings down fails Open (an
// error reply such as a wrong password, a TLS certificate that does not
// verify, a panic in valkey-go as a [driver.PanicError]); one that cannot
// be reached, does not answer or is not ready ([driver.Transient]) does
// not: the node connects on first use. Errors never contain the password.
func (Driver) Open(url string) (driver.Node, error) { return adapterkit.OpenPipelined(lib, url) }

// NewNode returns a node that runs scripts through c, a client the caller
// built and keeps: the node's Close does not close c. The node's Addr is the
// address c is connected to (for a client of several nodes, their sorted
// addresses joined by commas). The node hides each call's deadline from c,
// so that a call cancelled before its deadline returns at once even when c
// does not always pipeline.
func NewNode(c valkey.Client) driver.Node { return adapterkit.NewPipelined(lib, c) }

// newValkeyClient makes the clients of the nodes made from URLs; tests
// replace it.
var newValkeyClient = valkey.NewClient

// clientOption translates a node URL's options, with client-side caching
// off and every call pipelined ([adapterkit.ClientOptions] says why).
func clientOption(o *adapterkit.ClientOptions) valkey.ClientOption {
	opt := valkey.ClientOption{
		InitAddress: o.InitAddress, Username: o.Username, Password: o.Password, SelectDB: o.DB, TLSConfig: o.TLS,
		Dialer: o.Dialer, ConnWriteTimeout: o.WriteTimeout, DialCtxFn: o.DialFn,
		DisableCache: true, ForceSingleClient: !o.Cluster, AlwaysPipelining: true,
	}
	if o.SentinelMaster != "" {
		opt.Sentinel = valkey.SentinelOption{MasterSet: o.SentinelMaster, TLSConfig: o.TLS, Dialer: o.Dialer}
	}
	return opt
}
