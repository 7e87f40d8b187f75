package redigo

import (
	"context"
	"crypto/tls"
	"net"
	"runtime"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// Name is the driver name under which this package registers itself, as it
// appears in "redis+redigo://" and "rediss+redigo://" URLs.
const Name = "redigo"

func init() { dlm.Register(Name, Driver{}) }

// Driver opens nodes backed by a redigo pool. Its zero value is ready to use;
// package dlm uses the one registered under [Name].
type Driver struct{}

var _ driver.Driver = Driver{}

// Open parses url with [driver.ParseURL] and returns a node with a
// [redis.Pool] of its own, which the node's Close closes.
//
// Open connects at once and checks the server with [driver.CheckOpen],
// within the URL's dial timeout, as every backend does. A server that
// answers with an error reply (a wrong password, a user without the rights
// to connect, a database that does not exist, a password for a server that
// has none) fails Open. A server that cannot be reached, or answers that it
// is not ready ([driver.Transient]: LOADING, BUSY, MASTERDOWN, TRYAGAIN,
// CLUSTERDOWN), does not: the pool connects on use, so a manager can be
// opened while a minority of its nodes is down, and until the server is
// back Eval and Ping return the connection error. Errors never contain the
// password.
func (Driver) Open(url string) (driver.Node, error) {
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	if err := supported(cfg); err != nil {
		return nil, err
	}
	o := newConnOptions(cfg)
	n := newNode(o.pool(), cfg.Addr, true)
	n.password, n.open = cfg.Password, o.open
	if o.readTimeout > 0 {
		n.grace = o.readTimeout
	}
	if err := adapterkit.CheckOpen(cfg, Name, cfg.Addr, n.command, errorReply, n.Close); err != nil {
		return nil, err
	}
	return n, nil
}

// errorReply returns the text of err when it is an error reply of the
// server.
func errorReply(err error) (string, bool) { return adapterkit.ErrorReply[redis.Error](err) }

// connOptions says how a node's pool makes connections: redigo's
// counterpart of a node URL.
type connOptions struct {
	addr string
	tls  *tls.Config
	// auth is the arguments of AUTH: password, or user and password; nil
	// when the URL has no password (a user alone is ignored, as go-redis
	// ignores it).
	auth                                   []any
	db                                     int
	dialTimeout, readTimeout, writeTimeout time.Duration
	// poolSize bounds the connections open at once and kept idle.
	poolSize int
	// open has the pool's open connections, which the node's Close closes.
	open *openConns
	// replyLimit guards each connection ([adapterkit.LimitReplies]; 0:
	// none): redigo allocates what a reply's header announces.
	replyLimit int64
}

// newConnOptions translates a node URL. pool_size 0 means 10 per
// GOMAXPROCS, go-redis' default, since redigo's own (no bound, nothing kept
// idle) would open a connection per request.
func newConnOptions(cfg *driver.Config) connOptions {
	o := connOptions{
		addr: cfg.Addr, tls: cfg.TLS, db: cfg.DB, poolSize: cfg.PoolSize, replyLimit: adapterkit.ReplyLimit(cfg), open: &openConns{},
		dialTimeout: cfg.DialTimeout, readTimeout: cfg.ReadTimeout, writeTimeout: cfg.WriteTimeout,
	}
	switch {
	case cfg.Username != "" && cfg.Password != "":
		o.auth = []any{cfg.Username, cfg.Password}
	case cfg.Password != "":
		o.auth = []any{cfg.Password}
	}
	if o.poolSize == 0 {
		o.poolSize = 10 * runtime.GOMAXPROCS(0)
	}
	return o
}

// pool makes the node's pool. A request waits for a free connection as long
// as its context allows. An idle connection is checked before reuse (see
// testOnBorrow) and closed after 30 minutes unused, go-redis' default.
func (o connOptions) pool() *redis.Pool {
	return &redis.Pool{
		DialContext:  o.dial,
		MaxActive:    o.poolSize,
		MaxIdle:      o.poolSize,
		Wait:         true,
		IdleTimeout:  30 * time.Minute,
		TestOnBorrow: testOnBorrow,
	}
}

// dial is the pool's DialContext. It connects, authenticates and selects
// the database within the dial timeout and ctx (for a request on a goroutine
// of its own, within the node's life rather than the request's: see
// dialOnOwn); redigo's own DialContext
// does the TLS handshake, and before v1.8.9 AUTH and SELECT, without the
// context.
func (o connOptions) dial(ctx context.Context) (redis.Conn, error) {
	if own, ok := ctx.Value(dialContextKey{}).(context.Context); ok {
		ctx = own // a request's own goroutine: see dialOnOwn
	}
	ctx, cancel := context.WithTimeout(ctx, o.dialTimeout)
	defer cancel()
	nd := &net.Dialer{KeepAlive: 5 * time.Minute}
	var nc net.Conn
	var err error
	if o.tls != nil {
		nc, err = (&tls.Dialer{NetDialer: nd, Config: o.tls}).DialContext(ctx, "tcp", o.addr)
	} else {
		nc, err = nd.DialContext(ctx, "tcp", o.addr)
	}
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: redis.NewConn(adapterkit.LimitReplies(nc, o.replyLimit), o.readTimeout, o.writeTimeout), nc: nc, readTimeout: o.readTimeout, check: newChecker(socketOf(nc)), open: o.open}
	if !o.open.add(c) {
		c.Conn.Close()
		return nil, net.ErrClosed
	}
	if o.auth != nil {
		if _, err := redis.DoContext(c, ctx, "AUTH", o.auth...); err != nil {
			c.Close()
			return nil, err
		}
	}
	if o.db != 0 {
		if _, err := redis.DoContext(c, ctx, "SELECT", o.db); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}
