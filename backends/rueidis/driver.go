package rueidis

import (
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
func (Driver) Open(url string) (driver.Node, error) { return adapterkit.OpenPipelined(lib, url) }

// NewNode returns a node that runs scripts through c, a client the caller
// built and keeps: the node's Close does not close c. The node's Addr is the
// address c is connected to (for a client of several nodes, their sorted
// addresses joined by commas).
//
// rueidis sends a lone request with the context's deadline as the socket
// deadline unless the client was built with AlwaysPipelining, and in that
// mode does not see a context cancelled before its deadline; the node hides
// the deadline from c so that every call waits on the context.
func NewNode(c rueidisclient.Client) driver.Node { return adapterkit.NewPipelined(lib, c) }

// newRueidisClient makes the clients of the nodes made from URLs; tests
// replace it.
var newRueidisClient = rueidisclient.NewClient

// clientOption translates a node URL's options, with client-side caching
// off and every call pipelined ([adapterkit.ClientOptions] says why).
func clientOption(o *adapterkit.ClientOptions) rueidisclient.ClientOption {
	opt := rueidisclient.ClientOption{
		InitAddress: o.InitAddress, Username: o.Username, Password: o.Password, SelectDB: o.DB, TLSConfig: o.TLS,
		Dialer: o.Dialer, ConnWriteTimeout: o.WriteTimeout, DialCtxFn: o.DialFn,
		DisableCache: true, ForceSingleClient: !o.Cluster, AlwaysPipelining: true,
	}
	if o.SentinelMaster != "" {
		opt.Sentinel = rueidisclient.SentinelOption{MasterSet: o.SentinelMaster, TLSConfig: o.TLS, Dialer: o.Dialer}
	}
	return opt
}
