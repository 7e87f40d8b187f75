package goredis

import (
	"context"
	"errors"
	"net"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// refusedAddr returns a loopback address on which nothing listens: a
// connection to it is refused.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRefusedNodeReported checks that a node whose port refuses connections
// fails a lock attempt with the refusal, wrapped in a [dlm.NodeError] with
// its address, and not with the context's deadline: through a URL, and
// through a client wrapped with the options NewNode's documentation gives.
func TestRefusedNodeReported(t *testing.T) {
	addr := refusedAddr(t)
	tests := []struct {
		name string
		open func() (*dlm.Manager, error)
	}{
		{"Open", func() (*dlm.Manager, error) {
			return dlm.Open([]string{"redis+goredis://" + addr})
		}},
		{"NewNode", func() (*dlm.Manager, error) {
			opts := &redis.Options{Addr: addr, MaxRetries: -1}
			dialOnce(opts)
			rdb := redis.NewClient(opts)
			t.Cleanup(func() { rdb.Close() })
			return dlm.New([]driver.Node{NewNode(rdb)})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := tt.open()
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = m.TryLock(ctx, "refused")
			if !errors.Is(err, dlm.ErrUnavailable) {
				t.Fatalf("TryLock = %v; want ErrUnavailable", err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("TryLock = %v; want the refused connection (ECONNREFUSED)", err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("TryLock = %v; want no context deadline", err)
			}
			var ne *dlm.NodeError
			if !errors.As(err, &ne) || ne.Node != addr {
				t.Errorf("TryLock = %v; want a NodeError for %s", err, addr)
			}
		})
	}
}

// TestDialOnce checks that the options of a go-redis release with
// DialerRetries get one dial, and that a release without it is left alone.
func TestDialOnce(t *testing.T) {
	type withField struct {
		Addr          string
		DialerRetries int
	}
	type without struct{ Addr string }
	w := &withField{Addr: "a"}
	dialOnce(w)
	if w.DialerRetries != 1 {
		t.Errorf("dialOnce: DialerRetries = %d; want 1", w.DialerRetries)
	}
	dialOnce(&without{Addr: "a"}) // must not panic

	// The go-redis release this module is built with: where its options
	// have the field, the URL path sets it.
	o := clientOptions(&driver.Config{Addr: "127.0.0.1:1"})
	if f := reflect.ValueOf(o).Elem().FieldByName("DialerRetries"); f.IsValid() && f.Int() != 1 {
		t.Errorf("clientOptions: DialerRetries = %d; want 1", f.Int())
	}
	if o.MaxRetries != -1 {
		t.Errorf("clientOptions: MaxRetries = %d; want -1", o.MaxRetries)
	}
}
