package main

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// clockTick is how often the embedded nodes' clocks are moved on.
const clockTick = 5 * time.Millisecond

// nodes are miniredis servers in this process, each an independent master
// on a loopback port of its own.
type nodes struct {
	mu      sync.Mutex
	servers []*miniredis.Miniredis
	addrs   []string

	stop chan struct{}
	wg   sync.WaitGroup
}

// startNodes starts n miniredis servers.
func startNodes(n int) (*nodes, error) {
	c := &nodes{stop: make(chan struct{})}
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
// expires keys only when told time has passed; without this, a lock that is
// not extended would never expire, and the extensions would prove nothing.
func (c *nodes) runClock() {
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
			for _, s := range c.servers {
				s.FastForward(now.Sub(last))
			}
			c.mu.Unlock()
			last = now
		}
	}
}

// Addrs returns the servers' host:port addresses.
func (c *nodes) Addrs() []string { return c.addrs }

// Wipe makes every server forget all its keys at once, as if each had
// restarted without persistence: what Redlock's rules forbid, and the one
// way a held lock can vanish from a quorum before its TTL.
func (c *nodes) Wipe() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.servers {
		s.FlushAll()
	}
}

// Close stops the clock and the servers.
func (c *nodes) Close() {
	close(c.stop)
	c.wg.Wait()
	c.closeServers()
}

func (c *nodes) closeServers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.servers {
		s.Close()
	}
}
