package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
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
// its address, and not with the context's deadline: through a URL (of a
// server, a cluster, Sentinels), and through a client wrapped with the
// options NewNode's documentation gives. go-redis releases that dial again
// after a refused dial (DialerRetries) would otherwise spend the node
// timeout on one attempt.
//
// A busy machine can also spend the node timeout before the refusal comes:
// an attempt that ends at the node timeout without the refusal is
// inconclusive, and is made again with the node timeout doubled (from
// dlm's default of 500 ms, widenTries times); a build that dials again
// hits the node timeout whatever it is.
func TestRefusedNodeReported(t *testing.T) {
	t.Parallel()
	addr := refusedAddr(t)
	tests := []struct {
		name string
		node string // the node's address in errors; addr if empty
		open func(nodeTimeout dlm.Option) (*dlm.Manager, error)
		// noCause is set where go-redis v9.0.0 reports the failure without
		// its cause: "all sentinels specified in configuration are
		// unreachable". Later releases wrap the dial errors.
		noCause bool
	}{
		{name: "Open", open: func(nodeTimeout dlm.Option) (*dlm.Manager, error) {
			return dlm.Open([]string{"redis+goredis://" + addr}, nodeTimeout)
		}},
		{name: "OpenCluster", open: func(nodeTimeout dlm.Option) (*dlm.Manager, error) {
			return dlm.Open([]string{"redis+goredis://" + addr + "?cluster=true"}, nodeTimeout)
		}},
		{name: "OpenSentinel", node: "mymaster@" + addr, noCause: true, open: func(nodeTimeout dlm.Option) (*dlm.Manager, error) {
			return dlm.Open([]string{"redis+goredis://" + addr + "?sentinel_master=mymaster"}, nodeTimeout)
		}},
		{name: "NewNode", open: func(nodeTimeout dlm.Option) (*dlm.Manager, error) {
			opts := &redis.Options{Addr: addr, MaxRetries: -1}
			dialOnce(opts)
			rdb := redis.NewClient(opts)
			t.Cleanup(func() { rdb.Close() })
			return dlm.New([]driver.Node{NewNode(rdb)}, nodeTimeout)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			widening(t, func(t *testing.T, scale time.Duration) string {
				nodeTimeout := scale * 500 * time.Millisecond
				m, err := tt.open(dlm.WithNodeTimeout(nodeTimeout))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second+nodeTimeout)
				defer cancel()
				_, err = m.TryLock(ctx, "refused")
				if !errors.Is(err, dlm.ErrUnavailable) {
					t.Fatalf("TryLock = %v; want ErrUnavailable", err)
				}
				refused := errors.Is(err, syscall.ECONNREFUSED) || tt.noCause && strings.Contains(err.Error(), "unreachable")
				if !refused && errors.Is(err, context.DeadlineExceeded) {
					return fmt.Sprintf("TryLock with a %v node timeout = %v: the node timeout ended the attempt before the refusal came", nodeTimeout, err)
				}
				if !refused {
					t.Errorf("TryLock = %v; want the refused connection (ECONNREFUSED)", err)
				}
				if errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("TryLock = %v; want no context deadline", err)
				}
				node := tt.node
				if node == "" {
					node = addr
				}
				var ne *dlm.NodeError
				if !errors.As(err, &ne) || ne.Node != node {
					t.Errorf("TryLock = %v; want a NodeError for %s", err, node)
				}
				return ""
			})
		})
	}
}

// TestDialOnce checks that the options of a go-redis release with
// DialerRetries get one dial, and that a release without it is left alone.
func TestDialOnce(t *testing.T) {
	t.Parallel()
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
	// have the field, every URL path sets it.
	cfg := &driver.Config{Addr: "127.0.0.1:1", Addrs: []string{"127.0.0.1:1"}, SentinelMaster: "m"}
	for name, o := range map[string]any{
		"clientOptions": clientOptions(cfg), "clusterOptions": clusterOptions(cfg), "failoverOptions": failoverOptions(cfg),
	} {
		v := reflect.ValueOf(o).Elem()
		if f := v.FieldByName("DialerRetries"); f.IsValid() && f.Int() != 1 {
			t.Errorf("%s: DialerRetries = %d; want 1", name, f.Int())
		}
		if n := v.FieldByName("MaxRetries").Int(); n != -1 {
			t.Errorf("%s: MaxRetries = %d; want -1", name, n)
		}
	}
}
