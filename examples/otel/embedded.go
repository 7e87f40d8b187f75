package main

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// clockTick is how often the embedded nodes' clocks are moved on.
const clockTick = 5 * time.Millisecond

// cluster is miniredis servers in this process, each an independent master
// on a loopback port of its own, as in examples/quickstart.
type cluster struct {
	mu      sync.Mutex
	servers []*miniredis.Miniredis
	addrs   []string
	dead    []bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// startEmbedded starts n miniredis servers.
func startEmbedded(n int) (*cluster, error) {
	c := &cluster{dead: make([]bool, n), stop: make(chan struct{})}
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

// runClock moves the servers' clocks along with the real one: miniredis
// expires keys only when told time has passed.
func (c *cluster) runClock() {
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
func (c *cluster) Addrs() []string { return c.addrs }

// Kill stops server i, closing its listener and its clients' connections,
// as a crashed Redis would.
func (c *cluster) Kill(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dead[i] {
		c.dead[i] = true
		c.servers[i].Close()
	}
}

// FlushAll makes every live server forget its keys, as a Redis restarted
// without persistence would.
func (c *cluster) FlushAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if !c.dead[i] {
			s.FlushAll()
		}
	}
}

// Close stops the clock and every server still running.
func (c *cluster) Close() {
	close(c.stop)
	c.wg.Wait()
	c.closeServers()
}

func (c *cluster) closeServers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if !c.dead[i] {
			c.dead[i] = true
			s.Close()
		}
	}
}
