package dlmtest

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestDriverSlowDial checks that a connection whose dial outlasts the
// request that started it is made to its end and serves the next requests,
// rather than being thrown away at the request's deadline: the server would
// count it, and a node whose handshake takes longer than its callers'
// deadlines (a busy machine, a far or loaded server, TLS) would dial once
// per request and answer none. The node, opened from redis+NAME://addr/1 by
// the driver registered as name, reaches its server through a proxy that
// holds each new connection's first bytes (the handshake: HELLO, AUTH or
// SELECT) for 200 ms; its pooled connections are killed, and for a second
// requests with a 30 ms node deadline ([driver.WithNodeDeadline]) follow
// one another. At most 2 connections: one that the first request, on its
// caller's goroutine, may cut short, and one made to its end that serves
// the rest.
func TestDriverSlowDial(t *testing.T, name string) {
	const (
		deadline = 30 * time.Millisecond  // each request's node deadline
		hold     = 200 * time.Millisecond // the first bytes of each connection
		span     = time.Second
	)
	s := redistest.StartServer(t)
	p := startHoldingProxy(t, s.Addr(), hold)
	n, err := dlm.OpenNode("redis+" + name + "://" + p.addr + "/1?dial_timeout=10s")
	if err != nil {
		t.Fatalf("OpenNode: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	opened := p.accepted.Load() // the Open's connections
	if _, err := s.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatalf("CLIENT KILL: %v", err)
	}
	answered := 0
	for end := time.Now().Add(span); time.Now().Before(end); {
		ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(deadline))
		if _, err := n.Eval(ctx, slowDialScript, []string{"slowdial{k}"}, nil); err == nil {
			answered++
		}
		cancel()
	}
	got := p.accepted.Load() - opened
	t.Logf("%d connections over %v of requests with a %v deadline, %d answered", got, span, deadline, answered)
	if got > 2 {
		t.Errorf("the node opened %d connections while each took %v to dial; want at most 2", got, hold)
	}
	if answered == 0 {
		t.Error("no request was answered: no connection was made to its end")
	}
}

// slowDialScript reads a key.
var slowDialScript = driver.NewScript("return redis.call('EXISTS', KEYS[1])")

// holdingProxy forwards connections to a server, holding the first bytes
// each sends for a while, and counts the connections it accepted.
type holdingProxy struct {
	addr     string
	accepted atomic.Int64
}

// startHoldingProxy starts a holdingProxy to server; the test's cleanup
// stops it and closes its connections.
func startHoldingProxy(t *testing.T, server string, hold time.Duration) *holdingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{addr: ln.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(cs ...net.Conn) {
		mu.Lock()
		conns = append(conns, cs...)
		mu.Unlock()
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			up, err := net.Dial("tcp", server)
			if err != nil {
				c.Close()
				continue
			}
			track(c, up)
			wg.Add(2)
			go func() { // server to client
				defer wg.Done()
				io.Copy(c, up)
				c.Close()
			}()
			go func() { // client to server, the first bytes held
				defer wg.Done()
				defer up.Close()
				buf := make([]byte, 4096)
				k, err := c.Read(buf)
				if err != nil {
					return
				}
				time.Sleep(hold)
				if _, err := up.Write(buf[:k]); err != nil {
					return
				}
				io.Copy(up, c)
			}()
		}
	}()
	return p
}
