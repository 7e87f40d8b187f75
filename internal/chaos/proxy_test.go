package chaos

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// pingConn is a raw connection to Redis that sends PING.
type pingConn struct {
	net.Conn
	r *bufio.Reader
}

func dialPing(t *testing.T, addr string) *pingConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &pingConn{Conn: c, r: bufio.NewReader(c)}
}

// ping sends PING and waits up to timeout for +PONG.
func (c *pingConn) ping(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := c.SetDeadline(start.Add(timeout)); err != nil {
		return 0, err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return 0, err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return 0, errors.New("unexpected reply " + line)
	}
	return time.Since(start), nil
}

// pingOnce dials addr and sends one PING, returning any error of either.
func pingOnce(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = (&pingConn{Conn: c, r: bufio.NewReader(c)}).ping(timeout)
	return err
}

func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestProxyForwardsAndDelays(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	p := newProxy(t, srv.Addr())
	c := dialPing(t, p.Addr())
	base, err := c.ping(2 * time.Second)
	if err != nil {
		t.Fatalf("PING through the proxy: %v", err)
	}
	const lat = 40 * time.Millisecond
	for _, tc := range []struct {
		name     string
		up, down time.Duration
	}{
		{"up", lat, 0},
		{"down", 0, lat},
		{"both", lat, lat},
	} {
		p.SetLatency(tc.up, tc.down)
		rtt, err := c.ping(2 * time.Second)
		if err != nil {
			t.Fatalf("%s: PING: %v", tc.name, err)
		}
		if want := tc.up + tc.down; rtt < want {
			t.Errorf("%s: round trip %v with latency %v up, %v down; want at least %v", tc.name, rtt, tc.up, tc.down, want)
		}
		t.Logf("latency %s: round trip %v (without: %v)", tc.name, rtt, base)
	}
	p.SetLatency(0, 0)
	if _, err := c.ping(2 * time.Second); err != nil {
		t.Fatalf("PING after the latency was lifted: %v", err)
	}
}

func TestProxyBlackHole(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	p := newProxy(t, srv.Addr())
	old := dialPing(t, p.Addr())
	if _, err := old.ping(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	p.BlackHole()
	// An open connection stays open, takes the bytes, answers nothing.
	if _, err := old.ping(200 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("PING on a black-holed connection: %v; want a deadline to expire", err)
	}
	// A new one is accepted, and held too.
	fresh := dialPing(t, p.Addr())
	if _, err := fresh.ping(200 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("PING on a connection opened into the black hole: %v; want a deadline to expire", err)
	}
	if n := p.Conns(); n != 2 {
		t.Errorf("%d connections open through the black hole; want 2 (held open)", n)
	}
	p.Heal()
	// The held connections are reset; what they held never arrives.
	for name, c := range map[string]*pingConn{"old": old, "fresh": fresh} {
		if _, err := c.ping(2 * time.Second); err == nil || isTimeout(err) {
			t.Errorf("%s connection after Heal: %v; want it reset", name, err)
		}
	}
	if _, err := dialPing(t, p.Addr()).ping(2 * time.Second); err != nil {
		t.Fatalf("PING after Heal: %v", err)
	}
}

func TestProxyDrop(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	p := newProxy(t, srv.Addr())
	old := dialPing(t, p.Addr())
	if _, err := old.ping(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	p.Drop()
	start := time.Now()
	if _, err := old.ping(2 * time.Second); err == nil || isTimeout(err) {
		t.Errorf("PING on a dropped connection: %v; want a reset", err)
	}
	if err := pingOnce(p.Addr(), 2*time.Second); err == nil || isTimeout(err) {
		t.Errorf("PING on a connection opened while dropping: %v; want a reset", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("dropped connections failed after %v; want at once", d)
	}
	p.Heal()
	if _, err := dialPing(t, p.Addr()).ping(2 * time.Second); err != nil {
		t.Fatalf("PING after Heal: %v", err)
	}
}

func TestProxyTargetDown(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	p := newProxy(t, srv.Addr())
	srv.Kill()
	if err := pingOnce(p.Addr(), 2*time.Second); err == nil || isTimeout(err) {
		t.Errorf("PING through a proxy to a dead server: %v; want a reset", err)
	}
	srv.Restart()
	if _, err := dialPing(t, p.Addr()).ping(2 * time.Second); err != nil {
		t.Fatalf("PING after the server came back: %v", err)
	}
}

// TestPartition checks that Net.Partition cuts one client from the nodes
// it names, and only those: every other connection answers, the cut ones
// answer nothing, and all answer again once healed. How long to wait for
// an answer comes from the pace of the servers: an answer that must come
// gets a cap far above it (calmCap), and a cut connection is waited on for
// 200 ms at least, stretched to the pace.
func TestPartition(t *testing.T) {
	t.Parallel()
	servers := redistest.StartServers(t, 3)
	addrs := []string{servers[0].Addr(), servers[1].Addr(), servers[2].Addr()}
	var pace redistest.Pace
	for _, s := range servers {
		pace = pace.Max(redistest.MeasurePace(t, s))
	}
	answer, silence := calmCap(pace), pace.Stretch(200*time.Millisecond)
	t.Logf("pace %v: an answer within %v, a cut connection silent for %v", pace, answer, silence)
	n, err := NewNet(addrs, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	conns := make([][]*pingConn, 2)
	for c := range conns {
		for _, a := range n.Addrs(c) {
			conns[c] = append(conns[c], dialPing(t, a))
		}
	}
	heal := n.Partition(0, 1, 2)
	for c := range conns {
		for i, pc := range conns[c] {
			cut := c == 0 && i > 0
			if cut {
				if _, err := pc.ping(silence); !isTimeout(err) {
					t.Errorf("client %d to node %d, cut: %v; want a timeout", c, i, err)
				}
			} else if _, err := pc.ping(answer); err != nil {
				t.Errorf("client %d to node %d, not cut: %v", c, i, err)
			}
		}
	}
	heal()
	for c := range conns {
		for i, a := range n.Addrs(c) {
			if _, err := dialPing(t, a).ping(answer); err != nil {
				t.Errorf("client %d to node %d after healing: %v", c, i, err)
			}
		}
	}
}

func TestProxyCloseEndsGoroutines(t *testing.T) {
	srv := redistest.StartServer(t)
	snap := leakcheck.Take()
	p, err := NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	p.SetLatency(50*time.Millisecond, 0)
	a, b := dialPing(t, p.Addr()), dialPing(t, p.Addr())
	if _, err := a.ping(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	p.BlackHole()
	_, _ = b.Write([]byte("PING\r\n"))
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	a.Close()
	b.Close()
	snap.Check(t, 5*time.Second)
}
