package chaos

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// upstreamDialTimeout bounds the proxy's connection to its target.
const upstreamDialTimeout = time.Second

// Proxy is a fault-injecting TCP proxy on a loopback port in front of one
// target (a redis-server). Every connection a client opens to [Proxy.Addr]
// is relayed to the target, subject to the proxy's faults:
//
//   - [Proxy.SetLatency] delays every chunk of bytes in one direction or both,
//     preserving their order, as a slow link would;
//   - [Proxy.BlackHole] keeps the connections open and accepts their bytes but
//     forwards nothing either way, as a partition does before TCP gives up;
//   - [Proxy.Drop] resets every connection and every new one, as a crashed
//     host or a firewall's REJECT does;
//   - [Proxy.Heal] lifts both. Connections that were black-holed are reset
//     then: what they held never arrives, as after a partition long enough
//     for the clients to give up on them.
//
// Latency stays until it is set to zero. Close stops the proxy and every
// goroutine it started.
type Proxy struct {
	ln     net.Listener
	target string

	up, down atomic.Int64 // latency, client→server and server→client, in ns

	mu     sync.Mutex
	mode   mode
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

type mode int

const (
	pass mode = iota
	blackHole
	drop
)

// NewProxy starts a proxy to target on a free 127.0.0.1 port.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy to %s: %w", target, err)
	}
	p := &Proxy{ln: ln, target: target, links: make(map[*link]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where clients connect: "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy relays to.
func (p *Proxy) Target() string { return p.target }

// SetLatency delays the bytes sent from client to server by up and those
// from server to client by down. It applies to bytes read from now on.
func (p *Proxy) SetLatency(up, down time.Duration) {
	p.up.Store(int64(up))
	p.down.Store(int64(down))
}

// BlackHole stops forwarding: open connections stay open and their bytes are
// read and held, new connections are accepted and held too, nothing reaches
// either side. [Proxy.Heal] resets the held connections.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = blackHole
	for l := range p.links {
		l.hole()
	}
}

// Drop resets every open connection and, until [Proxy.Heal], every new one
// as soon as it is accepted.
func (p *Proxy) Drop() {
	p.mu.Lock()
	p.mode = drop
	links := p.snapshot()
	p.mu.Unlock()
	for _, l := range links {
		l.reset()
	}
}

// Heal forwards again: it lifts [Proxy.BlackHole] and [Proxy.Drop] and resets
// the connections that were black-holed. Latency is left as it is.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.mode = pass
	var holed []*link
	for l := range p.links {
		if l.holed.Load() {
			holed = append(holed, l)
		}
	}
	p.mu.Unlock()
	for _, l := range holed {
		l.reset()
	}
}

// Conns returns the number of client connections open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops accepting, closes every connection, and waits for the proxy's
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := p.snapshot()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.reset()
	}
	p.wg.Wait()
	return err
}

// snapshot lists the links; p.mu is held.
func (p *Proxy) snapshot() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	return links
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(time.Millisecond) // a transient accept error
			continue
		}
		p.mu.Lock()
		m, closed := p.mode, p.closed
		p.mu.Unlock()
		if closed || m == drop {
			resetConn(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c, m == blackHole)
	}
}

// serve relays one client connection. A connection accepted during a black
// hole is never connected to the target.
func (p *Proxy) serve(client net.Conn, holed bool) {
	defer p.wg.Done()
	l := &link{client: client}
	if holed {
		l.holed.Store(true)
	} else {
		server, err := net.DialTimeout("tcp", p.target, upstreamDialTimeout)
		if err != nil {
			resetConn(client) // the target is down: refuse, as it would
			return
		}
		l.server = server
	}
	p.mu.Lock()
	if p.closed || p.mode == drop {
		p.mu.Unlock()
		l.reset()
		return
	}
	p.links[l] = struct{}{}
	if p.mode == blackHole {
		l.hole()
	}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.pump(client, l.server, &p.up) }()
	go func() { defer wg.Done(); l.pump(l.server, client, &p.down) }()
	wg.Wait()
	l.reset()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// link is one relayed connection.
type link struct {
	client, server net.Conn // server is nil for a connection accepted into a black hole
	holed          atomic.Bool
	once           sync.Once
}

// hole makes the link drop everything it reads from now on.
func (l *link) hole() { l.holed.Store(true) }

// reset closes both ends with a TCP reset, which ends both pumps.
func (l *link) reset() {
	l.once.Do(func() {
		resetConn(l.client)
		if l.server != nil {
			resetConn(l.server)
		}
	})
}

// chunk is bytes read at one time, due for delivery at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pump copies src to dst, each chunk delayed by the latency at the time it
// was read, until either side fails. Without latency, and with nothing
// queued, a chunk is written at once by the reading goroutine; otherwise a
// second goroutine delivers the queue in order. A nil src (a black-holed
// connection with no server) returns at once; a nil dst discards.
func (l *link) pump(src, dst net.Conn, latency *atomic.Int64) {
	if src == nil {
		return
	}
	queue := make(chan chunk, 256)
	var queued atomic.Int64 // chunks in the queue or being written from it
	done := make(chan struct{})
	go func() {
		defer close(done)
		timer := time.NewTimer(0)
		defer timer.Stop()
		<-timer.C
		for c := range queue {
			if d := time.Until(c.due); d > 0 {
				timer.Reset(d)
				<-timer.C
			}
			l.write(dst, c.b)
			queued.Add(-1)
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !l.holed.Load() {
			lat := time.Duration(latency.Load())
			if lat == 0 && queued.Load() == 0 {
				l.write(dst, buf[:n])
			} else {
				queued.Add(1)
				queue <- chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(lat)}
			}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-done
	l.reset()
}

// write delivers b to dst unless the link is black-holed (then the bytes
// are held: never delivered) or dst is nil.
func (l *link) write(dst net.Conn, b []byte) {
	if l.holed.Load() || dst == nil {
		return
	}
	if _, err := dst.Write(b); err != nil {
		l.reset()
	}
}

// resetConn closes c so that the peer sees a reset rather than an orderly
// end of stream.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Net is a mesh of proxies: one per client and node, so that each client can
// be cut from any subset of the nodes independently of the others.
type Net struct {
	// Proxies[c][n] stands between client c and node n.
	Proxies [][]*Proxy
}

// NewNet starts a proxy for every pair of clients clients and targets.
func NewNet(targets []string, clients int) (*Net, error) {
	n := &Net{Proxies: make([][]*Proxy, clients)}
	for c := range n.Proxies {
		for _, t := range targets {
			p, err := NewProxy(t)
			if err != nil {
				n.Close()
				return nil, err
			}
			n.Proxies[c] = append(n.Proxies[c], p)
		}
	}
	return n, nil
}

// Addrs returns the addresses client c connects to, one per node.
func (n *Net) Addrs(c int) []string {
	addrs := make([]string, len(n.Proxies[c]))
	for i, p := range n.Proxies[c] {
		addrs[i] = p.Addr()
	}
	return addrs
}

// Node returns the proxies of node i, one per client.
func (n *Net) Node(i int) []*Proxy {
	ps := make([]*Proxy, len(n.Proxies))
	for c := range n.Proxies {
		ps[c] = n.Proxies[c][i]
	}
	return ps
}

// Partition cuts client c from the given nodes by black-holing the proxies
// between them. The returned function heals the cut.
func (n *Net) Partition(c int, nodes ...int) (heal func()) {
	return Partition(n.Proxies[c], nodes...)
}

// Close closes every proxy.
func (n *Net) Close() error {
	var errs []error
	for _, ps := range n.Proxies {
		for _, p := range ps {
			errs = append(errs, p.Close())
		}
	}
	return errors.Join(errs...)
}

// Partition black-holes proxies[i] for each i in nodes: a client whose node
// i is reached through proxies[i] is cut from those nodes. The returned
// function heals them.
func Partition(proxies []*Proxy, nodes ...int) (heal func()) {
	for _, i := range nodes {
		proxies[i].BlackHole()
	}
	return func() {
		for _, i := range nodes {
			proxies[i].Heal()
		}
	}
}
