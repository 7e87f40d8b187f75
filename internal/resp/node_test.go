package resp

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

func TestNodeKeepsBoundedIdle(t *testing.T) {
	s := startFake(t)
	n := NewNode(&driver.Config{Addr: s.addr(), PoolSize: 2})
	defer n.Close()
	var conns []*Conn
	for range 5 {
		c, err := n.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		n.put(c)
	}
	if got := len(n.idle); got != 2 {
		t.Errorf("after 5 connections came back, %d idle; want PoolSize 2", got)
	}
	if c, _ := n.get(context.Background()); c != conns[1] {
		t.Error("get did not reuse the last idle connection")
	}
}

func TestNodeDropsBrokenAndClosedConns(t *testing.T) {
	s := startFake(t, "+PONG\r\n")
	n := NewNode(&driver.Config{Addr: s.addr()})
	defer n.Close()
	ctx := context.Background()
	broken, _ := n.get(ctx)
	broken.broken = errors.New("test")
	n.put(broken)
	if len(n.idle) != 0 {
		t.Error("a broken connection went back to the pool")
	}
	if err := n.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if len(n.idle) != 1 {
		t.Fatalf("%d idle connections after a Ping; want 1", len(n.idle))
	}
	s.closeConns()
	awaitClosed(n.idle[0].raw) // the FIN arrives
	c, err := n.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c == broken || len(n.idle) != 0 {
		t.Error("get returned an idle connection the server had closed")
	}
	n.put(c)
}

func TestNodeClose(t *testing.T) {
	s := startFake(t, "+PONG\r\n")
	n := NewNode(&driver.Config{Addr: s.addr()})
	ctx := context.Background()
	if err := n.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	inUse, _ := n.get(ctx)
	if err := n.Close(); err != nil {
		t.Errorf("Close() = %v; want nil", err)
	}
	n.put(inUse)
	if len(n.idle) != 0 {
		t.Error("a connection returned after Close was kept")
	}
	if _, err := n.Eval(ctx, driver.NewScript("return 1"), nil, nil); !errors.Is(err, errClosed) {
		t.Errorf("Eval after Close = %v; want %v", err, errClosed)
	}
}

func TestIdleClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server func(net.Conn)
		want   bool
	}{
		{"quiet", func(net.Conn) {}, false},
		{"data nobody asked for", func(c net.Conn) { c.Write([]byte("+unasked\r\n")) }, true},
		{"closed by the server", func(c net.Conn) { c.Close() }, true},
	} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		client, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		tc.server(server)
		if tc.want {
			awaitClosed(client) // the segment arrives
		} else {
			time.Sleep(10 * time.Millisecond) // a segment sent by mistake would arrive
		}
		if got := idleClosed(client); got != tc.want {
			t.Errorf("%s: idleClosed = %v; want %v", tc.name, got, tc.want)
		}
		client.Close()
		server.Close()
		l.Close()
	}
}

// awaitClosed waits until idleClosed(c) holds, for a segment the peer sent
// to arrive, however late a busy machine delivers it: for at most 5 seconds,
// or 20 times the latest its own 1ms polling sleeps woke past their time
// where that is more. The caller checks idleClosed(c) itself.
func awaitClosed(c net.Conn) {
	start := time.Now()
	var late time.Duration
	for !idleClosed(c) && time.Since(start) < max(5*time.Second, 20*late) {
		slept := time.Now()
		time.Sleep(time.Millisecond)
		late = max(late, time.Since(slept)-time.Millisecond)
	}
}
