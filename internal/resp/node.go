package resp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/dlmgo/redlock/dlm/driver"
)

// DefaultIdle is how many idle connections a [Node] keeps when its
// Config.PoolSize is 0.
const DefaultIdle = 8

// Node is a [driver.Node] that keeps a few idle connections and dials more
// on demand. It drops idle connections the server has closed, so a node
// works again as soon as a restarted server answers. It is safe for
// concurrent use.
type Node struct {
	cfg     driver.Config
	maxIdle int

	mu     sync.Mutex
	idle   []*Conn
	closed bool
}

var (
	_ driver.Node   = (*Node)(nil)
	_ driver.Pinger = (*Node)(nil)
	_ driver.Setter = (*Node)(nil)
)

// errClosed is returned by a Node's methods after Close.
var errClosed = errors.New("resp: node closed")

// NewNode returns a Node for the server cfg describes. It does not dial:
// connections are made by the first requests. cfg.PoolSize bounds the idle
// connections kept between requests (default [DefaultIdle]); connections
// beyond it are closed after use.
func NewNode(cfg *driver.Config) *Node {
	n := &Node{cfg: *cfg, maxIdle: cfg.PoolSize}
	if n.maxIdle <= 0 {
		n.maxIdle = DefaultIdle
	}
	return n
}

// Eval runs s by EVALSHA and, when the server answers NOSCRIPT, by EVAL.
func (n *Node) Eval(ctx context.Context, s *driver.Script, keys []string, args []string) (any, error) {
	return n.do(ctx, func(c *Conn) (any, error) {
		v, err := c.Do(ctx, evalArgs("EVALSHA", s.Hash, keys, args)...)
		if driver.IsNoScript(err) {
			v, err = c.Do(ctx, evalArgs("EVAL", s.Source, keys, args)...)
		}
		return v, err
	})
}

func evalArgs(cmd, script string, keys, args []string) []string {
	out := make([]string, 0, 3+len(keys)+len(args))
	out = append(out, cmd, script, strconv.Itoa(len(keys)))
	out = append(out, keys...)
	return append(out, args...)
}

// SetNXGet sends SET key value NX GET PX ms.
func (n *Node) SetNXGet(ctx context.Context, key, value, ms string) (any, error) {
	return n.do(ctx, func(c *Conn) (any, error) { return c.Do(ctx, "SET", key, value, "NX", "GET", "PX", ms) })
}

// Ping sends PING and checks for PONG.
func (n *Node) Ping(ctx context.Context) error {
	v, err := n.do(ctx, func(c *Conn) (any, error) { return c.Do(ctx, "PING") })
	if err != nil {
		return err
	}
	if v != "PONG" {
		return fmt.Errorf("resp: %s: PING answered %v", n.cfg.Addr, v)
	}
	return nil
}

// Addr returns the server's host:port.
func (n *Node) Addr() string { return n.cfg.Addr }

// Close closes the idle connections; those in use are closed when their
// request ends. Requests after Close fail.
func (n *Node) Close() error {
	n.mu.Lock()
	idle := n.idle
	n.idle, n.closed = nil, true
	n.mu.Unlock()
	var errs []error
	for _, c := range idle {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// do runs f on a pooled connection and pools it again unless it broke.
func (n *Node) do(ctx context.Context, f func(*Conn) (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("resp: %s: %w", n.cfg.Addr, err)
	}
	c, err := n.get(ctx)
	if err != nil {
		return nil, err
	}
	defer n.put(c)
	return f(c)
}

func (n *Node) get(ctx context.Context) (*Conn, error) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errClosed
	}
	for k := len(n.idle); k > 0; k = len(n.idle) {
		c := n.idle[k-1]
		n.idle = n.idle[:k-1]
		if !idleClosed(c.raw) {
			n.mu.Unlock()
			return c, nil
		}
		c.Close()
	}
	n.mu.Unlock()
	return Dial(ctx, &n.cfg)
}

func (n *Node) put(c *Conn) {
	n.mu.Lock()
	if c.broken == nil && !n.closed && len(n.idle) < n.maxIdle {
		n.idle = append(n.idle, c)
		c = nil
	}
	n.mu.Unlock()
	if c != nil {
		c.Close()
	}
}
