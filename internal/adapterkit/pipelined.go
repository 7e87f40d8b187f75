package adapterkit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

var (
	_ driver.Node         = (*Pipelined[int, int])(nil)
	_ driver.Pinger       = (*Pipelined[int, int])(nil)
	_ driver.Setter       = (*Pipelined[int, int])(nil)
	_ driver.Sharded      = (*Pipelined[int, int])(nil)
	_ driver.ReplicaAcker = (*Pipelined[int, int])(nil)
	_ driver.Subscriber   = (*Pipelined[int, int])(nil)
)

// Pipelined is a node over a client of a [Library] that pipelines, shared
// by every call: the library batches concurrent requests over a few
// connections, and the node never holds a connection for itself but for
// WAIT and pub/sub. It is the whole node of the backends for rueidis and
// valkey-go, which hold only the library's calls. Make one with
// [OpenPipelined] or [NewPipelined].
type Pipelined[C, D comparable] struct {
	lib  Library[C, D]
	addr string
	// owned says that the node made the client and Close closes it.
	owned bool
	// sharded is set for a client in cluster mode.
	sharded bool
	// hideDeadline is set for clients the user built, which may not
	// pipeline always: see [noDeadline].
	hideDeadline bool
	// password is redacted from errors and panics.
	password string
	errs     errs

	// ref holds the client once there is one. Calls read it without a lock.
	ref atomic.Pointer[C]

	// lastReply is when the server last answered, in nanoseconds since
	// born, or 0 after a failure: see guard.go.
	born          time.Time
	lastReply     atomic.Int64
	healthyWindow time.Duration

	// gate is entered by every use of the client and closed by Close,
	// which therefore never closes the client under a call, and after which
	// no call uses it: the client would dial a connection for a call made
	// after its Close. It counts the goroutines a call leaves running
	// (guard.go, connect.go), which Close waits for.
	gate Gate

	// conns are the connections of a client the node made, which Close
	// closes if the client's own Close has not ended after closeGrace
	// (conns.go).
	conns      *conns
	closeGrace time.Duration
	// endLife ends the context that the shielded dials of a client the
	// node made run within (dialshield.go), at Close; dials counts those
	// under way.
	endLife context.CancelFunc
	dials   atomic.Int32

	// Connecting on first use, for nodes whose server was down at Open:
	// opt is what to connect with, dialing the attempt under way (guarded
	// by mu).
	opt     *ClientOptions
	mu      sync.Mutex
	dialing *attempt[C]
}

// errs are a node's errors, each naming its library and matching the
// package's error of its kind.
type errs struct {
	closed, subscriptionClosed, subscriptionEnded, clientTimeout error
}

// Errors a [Pipelined] node's calls return: after the node's Close, after a
// subscription's Close, and after a sharded subscription's end. Each starts
// with the library's name and matches the error here (errors.Is).
var (
	ErrClosed             = errors.New("node closed")
	ErrSubscriptionClosed = errors.New("subscription closed")
	ErrSubscriptionEnded  = errors.New("subscription ended")
)

func newErrs(name string) errs {
	named := func(err error) error { return fmt.Errorf("%s: %w", name, err) }
	return errs{named(ErrClosed), named(ErrSubscriptionClosed), named(ErrSubscriptionEnded), named(ErrClientTimeout)}
}

// defaultHealthyWindow is healthyWindow for clients the user built. rueidis
// defaults their ConnWriteTimeout to 10s; a client set far lower than the
// window can hold a call after going silent for up to twice its dial
// timeout.
const defaultHealthyWindow = 500 * time.Millisecond

// NewPipelined returns a node that runs scripts through c, a client the
// caller built and keeps: the node's Close does not close c. The node's
// Addr is the address c is connected to (for a client of several nodes,
// their sorted addresses joined by commas).
//
// The library sends a lone request with the context's deadline as the
// socket deadline unless the client always pipelines, and in that mode does
// not see a context cancelled before its deadline; the node hides the
// deadline from c so that every call waits on the context.
func NewPipelined[C, D comparable](lib Library[C, D], c C) *Pipelined[C, D] {
	n := &Pipelined[C, D]{
		lib: lib, addr: clientAddr(lib, c), sharded: lib.IsCluster(c), hideDeadline: true, errs: newErrs(lib.Name()),
		born: time.Now(), healthyWindow: defaultHealthyWindow,
	}
	n.ref.Store(&c)
	return n
}

func clientAddr[C, D comparable](lib Library[C, D], c C) string {
	nodes := lib.Nodes(c)
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return lib.Name()
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}

// OpenPipelined parses url with [driver.ParseURL] and returns a node with a
// client of its own, which the node's Close closes: a client of one server,
// or for a URL with cluster=true a client in cluster mode over the seed
// addresses, or for a URL with sentinel_master=NAME a client that finds the
// master through the Sentinels. The node's Addr is [driver.Config.Name].
//
// It connects at once and checks the server as [Driver.Open] documents for
// these backends, with [CheckOpen]; a server that cannot be reached or is
// not ready leaves a node that connects on first use.
func OpenPipelined[C, D comparable](lib Library[C, D], url string) (driver.Node, error) {
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	life, endLife := context.WithCancel(context.Background())
	n := &Pipelined[C, D]{
		lib: lib, addr: cfg.Name(), owned: true, sharded: cfg.Cluster, password: cfg.Password, errs: newErrs(lib.Name()),
		opt: NewClientOptions(cfg), closeGrace: cfg.WriteTimeout, endLife: endLife,
		// Half the time after which the client drops a silent
		// connection (guard.go).
		born: time.Now(), healthyWindow: cfg.WriteTimeout / 2,
	}
	n.conns = &conns{replyLimit: ReplyLimit(cfg), life: life, unsure: func() { n.lastReply.Store(0) }}
	n.opt.DialFn = n.conns.dial
	if err := n.open(cfg); err != nil {
		return nil, err
	}
	return n, nil
}

// open makes the client of a node that OpenPipelined made, and checks the
// server with [driver.CheckOpen]. It returns the error of a server that
// turned the node's settings down ([Refused]: a connect that fails so,
// wrong password, a user without rights, no such database, a TLS
// certificate that does not verify, a panic of the library), having closed
// the node. A server that cannot be reached or is not ready leaves the node
// to connect on first use. A cluster that cannot be reached is connected to
// on first use; the check is that of a single server.
func (n *Pipelined[C, D]) open(cfg *driver.Config) error {
	c, err := n.newClient()
	if err != nil {
		if Refused(err, n.errorReply) {
			return driver.RedactError(fmt.Errorf("%s: connect %s: %w", n.lib.Name(), n.addr, err), cfg.Password)
		}
		return nil // unreachable for now: connect on first use
	}
	n.ref.Store(&c)
	n.sawReply()
	do := func(ctx context.Context, args ...string) error { return n.command(dialHere(ctx), c, args...) }
	return CheckOpen(cfg, n.lib.Name(), n.addr, do, n.errorReply, n.Close)
}

// command sends args to the server through c, for [driver.CheckOpen].
func (n *Pipelined[C, D]) command(ctx context.Context, c C, args ...string) (err error) {
	defer n.panics().RecoverTo(&err)
	_, err = n.lib.Do(ctx, c, args...)
	if err != nil && !n.isReply(err) {
		return driver.RedactError(err, n.password)
	}
	return err
}

// newClient is the library's Connect with a panic turned into an error.
func (n *Pipelined[C, D]) newClient() (c C, err error) {
	defer n.panics().RecoverTo(&err)
	return n.lib.Connect(n.opt)
}

// panics recovers the node's panics, redacting its password.
func (n *Pipelined[C, D]) panics() Panics {
	return Panics{Client: n.lib.Name(), Password: n.password}
}

// isReply reports whether err is an error reply of the server.
func (n *Pipelined[C, D]) isReply(err error) bool { return n.lib.ReplyError(err) != nil }

// errorReply returns the text of err when it is an error reply of the
// server. A [ReplyError] has it whole. rueidis' own error type, which the
// handshake returns, drops a leading "ERR ", which errorReply puts back
// before a text that does not start with a code in capitals ("max number
// of clients reached"); "ERR DB index is out of range" stays "DB index
// ...", whose classification is the same.
func (n *Pipelined[C, D]) errorReply(err error) (string, bool) {
	var whole *ReplyError
	if errors.As(err, &whole) {
		return whole.Msg, true
	}
	reply := n.lib.ReplyError(err)
	if reply == nil {
		return "", false
	}
	text := reply.Error()
	if code, _, _ := strings.Cut(text, " "); code == "" || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		text = "ERR " + text
	}
	return text, true
}

// Addr returns the node's host:port.
func (n *Pipelined[C, D]) Addr() string { return n.addr }

// Sharded reports whether the node's client is in cluster mode: package dlm
// then refuses, up front, locks over keys of several hash slots. A node
// made from a URL without cluster=true is one master.
func (n *Pipelined[C, D]) Sharded() bool { return n.sharded }

// Close closes the client if the node made it, after the calls under way
// and a connection attempt under way have ended; it cuts short the dials of
// calls whose callers gave up on them. It waits at most the write timeout
// for the server to answer the client's QUIT, then closes the connections.
// Calls after Close fail.
func (n *Pipelined[C, D]) Close() error {
	if n.endLife != nil {
		// Before the gate closes, which waits for the calls inside.
		n.endLife()
	}
	if !n.gate.Close() {
		return nil
	}
	n.gate.Wait()
	if c := n.ref.Swap(nil); c != nil && n.owned {
		return n.closeClient(*c)
	}
	return nil
}
