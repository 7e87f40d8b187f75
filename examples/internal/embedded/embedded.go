// Package embedded runs the examples' default nodes: miniredis servers in
// the example's own process, each an independent master on a loopback port
// of its own. It is for demos; the project's tests run real redis-server
// processes (package dlmtest).
package embedded

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// clockTick is how often the servers' clocks are moved on.
const clockTick = 5 * time.Millisecond

// Cluster is a set of embedded servers. Its methods are safe for concurrent
// use.
type Cluster struct {
	mu      sync.Mutex
	servers []*miniredis.Miniredis
	addrs   []string
	dead    []bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// Start starts n servers.
func Start(n int) (*Cluster, error) {
	c := &Cluster{dead: make([]bool, n), stop: make(chan struct{})}
	for range n {
		s, err := miniredis.Run()
		if err != nil {
			c.closeServers()
			return nil, err
		}
		c.servers = append(c.servers, s)
		c.addrs = append(c.addrs, s.Addr())
	}
	c.wg.Add(1)
	go c.runClock()
	return c, nil
}

// runClock moves the servers' clocks along with the real one. miniredis
// never expires a key by itself — TTLs only run down when told that time
// has passed — and a lock that is not extended, or whose holder died, would
// otherwise stay forever, which a real Redis would never do.
func (c *Cluster) runClock() {
	defer c.wg.Done()
	t := time.NewTicker(clockTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			c.mu.Lock()
			for i, s := range c.servers {
				if !c.dead[i] {
					s.FastForward(now.Sub(last))
				}
			}
			c.mu.Unlock()
			last = now
		}
	}
}

// Addrs returns the servers' host:port addresses, dead or alive.
func (c *Cluster) Addrs() []string { return c.addrs }

// Kill stops server i, closing its listener and its clients' connections,
// as a crashed Redis would.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dead[i] {
		c.dead[i] = true
		c.servers[i].Close()
	}
}

// FlushAll makes every live server forget all its keys at once, as if each
// had restarted without persistence: what Redlock's rules forbid, and the
// one way a held lock can vanish from a quorum before its TTL.
func (c *Cluster) FlushAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if !c.dead[i] {
			s.FlushAll()
		}
	}
}

// Close stops the clock and every server still running.
func (c *Cluster) Close() {
	close(c.stop)
	c.wg.Wait()
	c.closeServers()
}

func (c *Cluster) closeServers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if !c.dead[i] {
			c.dead[i] = true
			s.Close()
		}
	}
}
