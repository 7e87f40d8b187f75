package adapterkit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// fakeClient is a client of fakeLibrary: a server in memory, which knows a
// script once EVAL has sent it.
type fakeClient struct {
	mu     sync.Mutex
	cached map[string]bool
	sent   []string
	closed int
}

func (c *fakeClient) send(cmd string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, cmd)
}

// fakeReply is fakeLibrary's error reply, which drops "ERR " as rueidis'
// does.
type fakeReply struct{ text string }

func (e *fakeReply) Error() string { return e.text }

// fakeLibrary is a Library of fakeClients; connect makes them.
type fakeLibrary struct {
	connect func(o *ClientOptions) (*fakeClient, error)
}

func (fakeLibrary) Name() string { return "fake" }
func (l fakeLibrary) Connect(o *ClientOptions) (*fakeClient, error) {
	return l.connect(o)
}
func (fakeLibrary) Close(c *fakeClient) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed++
}
func (fakeLibrary) Nodes(c *fakeClient) map[string]*fakeClient {
	return map[string]*fakeClient{"f:1": c}
}
func (fakeLibrary) IsCluster(*fakeClient) bool { return false }
func (l fakeLibrary) Eval(ctx context.Context, c *fakeClient, s *driver.Script, keys, args []string, source bool) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if source {
		c.sent = append(c.sent, "EVAL")
		c.cached = map[string]bool{s.Hash: true}
	} else {
		c.sent = append(c.sent, "EVALSHA")
		if !c.cached[s.Hash] {
			return nil, &ReplyError{Msg: "NOSCRIPT No matching script", Err: &fakeReply{"NOSCRIPT No matching script"}}
		}
	}
	return args[0], nil
}
func (l fakeLibrary) EvalOn(ctx context.Context, d *fakeClient, s *driver.Script, keys, args []string, source bool) (any, error) {
	return l.Eval(ctx, d, s, keys, args, source)
}
func (fakeLibrary) SetNXGet(ctx context.Context, c *fakeClient, key, val, ms string) (any, error) {
	c.send("SET")
	return nil, nil
}
func (fakeLibrary) Do(ctx context.Context, c *fakeClient, args ...string) (any, error) {
	c.send(args[0])
	return "OK", nil
}
func (fakeLibrary) Dedicated(c *fakeClient, f func(*fakeClient) error) error { return f(c) }
func (fakeLibrary) Wait(ctx context.Context, d *fakeClient, replicas int, timeout time.Duration) (int64, error) {
	d.send("WAIT")
	return int64(replicas), nil
}
func (fakeLibrary) Dedicate(c *fakeClient, h driver.PubSubHandler, kind string) (*fakeClient, <-chan error) {
	ended := make(chan error)
	close(ended)
	return c, ended
}
func (fakeLibrary) PubSub(ctx context.Context, d *fakeClient, cmd string, channels ...string) error {
	return nil
}
func (fakeLibrary) CloseDedicated(*fakeClient) {}
func (fakeLibrary) ReplyError(err error) error { return Find[*fakeReply](err) }

// TestPipelinedEval checks the path of a call through a Pipelined node:
// EVALSHA, then EVAL on NOSCRIPT, EVALSHA alone once the server has the
// script; WAIT after the script for EvalAck; and, on a node of a client of
// the user's, nothing after Close, which leaves that client open.
func TestPipelinedEval(t *testing.T) {
	t.Parallel()
	c := &fakeClient{}
	n := NewPipelined[*fakeClient, *fakeClient](fakeLibrary{}, c)
	ctx := context.Background()
	s := driver.NewScript("return ARGV[1]")
	for i := 0; i < 2; i++ {
		if v, err := n.Eval(ctx, s, nil, []string{"v"}); v != "v" || err != nil {
			t.Fatalf("Eval #%d = %v, %v; want v, nil", i+1, v, err)
		}
	}
	if v, acked, err := n.EvalAck(ctx, s, nil, []string{"w"}, 2, time.Second); v != "w" || acked != 2 || err != nil {
		t.Errorf("EvalAck = %v, %d, %v; want w, 2, nil", v, acked, err)
	}
	if want := "EVALSHA EVAL EVALSHA EVALSHA WAIT"; strings.Join(c.sent, " ") != want {
		t.Errorf("commands sent %q; want %q", c.sent, want)
	}
	if n.Addr() != "f:1" || n.Close() != nil || c.closed != 0 {
		t.Errorf("Addr, Close, client's closes = %q, _, %d; want f:1, nil, 0", n.Addr(), c.closed)
	}
	if _, err := n.Eval(ctx, s, nil, []string{"v"}); !errors.Is(err, ErrClosed) || !strings.HasPrefix(err.Error(), "fake: ") {
		t.Errorf("Eval after Close = %v; want fake's ErrClosed", err)
	}
}

// TestOpenPipelined checks Open's choices: a server that refuses the
// settings fails Open, without the password; one that cannot be reached
// leaves a node that connects on first use, and whose Close closes the
// client it made, once.
func TestOpenPipelined(t *testing.T) {
	t.Parallel()
	refused := fakeLibrary{connect: func(o *ClientOptions) (*fakeClient, error) {
		return nil, &fakeReply{"WRONGPASS invalid password s3cret"}
	}}
	if n, err := OpenPipelined[*fakeClient, *fakeClient](refused, "redis://:s3cret@h:1"); err == nil || n != nil ||
		!strings.HasPrefix(err.Error(), "fake: connect h:1: WRONGPASS") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("OpenPipelined of a refusing server = %v, %v; want nil and fake's WRONGPASS without the password", n, err)
	}

	var mu sync.Mutex
	var c *fakeClient
	down := true
	lib := fakeLibrary{connect: func(o *ClientOptions) (*fakeClient, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return nil, errors.New("connection refused")
		}
		c = &fakeClient{}
		return c, nil
	}}
	n, err := OpenPipelined[*fakeClient, *fakeClient](lib, "redis://h:1?write_timeout=70ms")
	if err != nil {
		t.Fatalf("OpenPipelined of a server down = %v; want a node", err)
	}
	if w := n.(*Pipelined[*fakeClient, *fakeClient]).healthyWindow; w != 35*time.Millisecond {
		t.Errorf("healthy window %v; want half the write timeout, 35ms", w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.(driver.Pinger).Ping(ctx); err == nil || !strings.Contains(err.Error(), "fake: connect h:1: connection refused") {
		t.Errorf("Ping while the server is down = %v; want the connection error", err)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	if err := n.(driver.Pinger).Ping(ctx); err != nil {
		t.Fatalf("Ping once the server is up = %v; want nil", err)
	}
	if err := n.Close(); err != nil || c.closed != 1 || n.Close() != nil || c.closed != 1 {
		t.Errorf("Close, Close = %v; closed the client %d times; want nil and once", err, c.closed)
	}
}

// TestErrorReply checks the text of an error reply as Open's check reads
// it: whole from a ReplyError, and with the "ERR " the library dropped put
// back before a text that starts with no code.
func TestErrorReply(t *testing.T) {
	t.Parallel()
	n := NewPipelined[*fakeClient, *fakeClient](fakeLibrary{}, &fakeClient{})
	for _, tc := range []struct {
		err  error
		want string
		ok   bool
	}{
		{&ReplyError{Msg: "ERR unknown command", Err: &fakeReply{"unknown command"}}, "ERR unknown command", true},
		{&fakeReply{"max number of clients reached"}, "ERR max number of clients reached", true},
		{&fakeReply{"WRONGPASS invalid"}, "WRONGPASS invalid", true},
		{&fakeReply{"DB index is out of range"}, "DB index is out of range", true},
		{errors.New("connection refused"), "", false},
		{(*fakeReply)(nil), "", false},
	} {
		if got, ok := n.errorReply(tc.err); got != tc.want || ok != tc.ok {
			t.Errorf("errorReply(%#v) = %q, %v; want %q, %v", tc.err, got, ok, tc.want, tc.ok)
		}
	}
}
