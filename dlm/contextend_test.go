package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// silentNode is a node that answers no request: each fails when its
// context ends, or when gone is closed, as the connection of a server that
// stopped answering ends when it is reset.
type silentNode struct {
	addr string
	gone <-chan struct{}
}

func (n *silentNode) Eval(ctx context.Context, _ *driver.Script, _, _ []string) (any, error) {
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("read tcp %s: %w", n.addr, ctx.Err())
	case <-n.gone:
		return nil, fmt.Errorf("read tcp %s: connection reset by peer", n.addr)
	}
}

func (n *silentNode) Addr() string { return n.addr }
func (n *silentNode) Close() error { return nil }

// TestLockContextEndKeepsLastAttemptClass checks that a blocking acquire
// whose context ends (by its deadline or a cancellation) returns an error
// that matches the context's error and also the class of its last completed
// attempt, ErrNotObtained when another holder had the lock and
// ErrUnavailable when the nodes failed, with that attempt's *QuorumError
// found by errors.As — for Lock, LockAll, Do, RLock, Semaphore.Acquire and
// Campaign. When no attempt completed before the context ended (the nodes
// never answered), the error matches the context's error alone.
func TestLockContextEndKeepsLastAttemptClass(t *testing.T) {
	t.Parallel()
	// Each attempt ends within the node timeout; the context ends after
	// many of them.
	const nodeTimeout = 200 * time.Millisecond
	const wait = 5 * nodeTimeout
	_, nodes := startNodes(t, 3)
	holder := rwManager(t, nodes, dlm.WithNodeTimeout(nodeTimeout))
	waiter := rwManager(t, nodes, dlm.WithNodeTimeout(nodeTimeout))
	down := rwManager(t, []driver.Node{downNode("127.0.0.1:1"), downNode("127.0.0.1:2"), downNode("127.0.0.1:3")},
		dlm.WithNodeTimeout(nodeTimeout))
	// These nodes answer no request before the context ends, long before
	// their node timeout; once the test is over, they fail the requests
	// still under way (cleanups run last first), so Close need not wait.
	gone := make(chan struct{})
	silent := rwManager(t, []driver.Node{&silentNode{"127.0.0.1:4", gone}, &silentNode{"127.0.0.1:5", gone}, &silentNode{"127.0.0.1:6", gone}},
		dlm.WithTTL(time.Minute), dlm.WithNodeTimeout(4*wait))
	t.Cleanup(func() { close(gone) })

	type op struct {
		name string
		// hold takes, on the holder's manager, what makes acquire wait.
		hold func(ctx context.Context, key string) error
		// acquire is the blocking call, made on m.
		acquire func(ctx context.Context, m *dlm.Manager, key string) error
	}
	lock := func(ctx context.Context, key string) error {
		_, err := holder.Lock(ctx, key)
		return err
	}
	ops := []op{
		{"Lock", lock, func(ctx context.Context, m *dlm.Manager, key string) error {
			_, err := m.Lock(ctx, key)
			return err
		}},
		{"LockAll", lock, func(ctx context.Context, m *dlm.Manager, key string) error {
			_, err := m.LockAll(ctx, []string{"{" + key + "}:b", key})
			return err
		}},
		{"Do", lock, func(ctx context.Context, m *dlm.Manager, key string) error {
			return m.Do(ctx, key, func(context.Context) error { return errors.New("fn ran without the lock") })
		}},
		{"RLock", lock, func(ctx context.Context, m *dlm.Manager, key string) error {
			_, err := m.RLock(ctx, key)
			return err
		}},
		{"Semaphore.Acquire", func(ctx context.Context, key string) error {
			s, err := holder.Semaphore(key, 1)
			if err == nil {
				_, err = s.Acquire(ctx)
			}
			return err
		}, func(ctx context.Context, m *dlm.Manager, key string) error {
			s, err := m.Semaphore(key, 1)
			if err != nil {
				return fmt.Errorf("Semaphore: %w", err)
			}
			_, err = s.Acquire(ctx)
			return err
		}},
		{"Campaign", func(ctx context.Context, key string) error {
			_, err := campaign(ctx, holder, key, "other")
			return err
		}, func(ctx context.Context, m *dlm.Manager, key string) error {
			_, err := campaign(ctx, m, key, "me")
			return err
		}},
	}
	classes := []struct {
		name string
		m    *dlm.Manager
		held bool
		// want is the class of the last attempt; nil when no attempt
		// completes before the context ends.
		want error
	}{
		{"held elsewhere", waiter, true, dlm.ErrNotObtained},
		{"nodes failed", down, false, dlm.ErrUnavailable},
		{"no attempt completed", silent, false, nil},
	}
	ends := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), wait)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			stop := time.AfterFunc(wait, cancel)
			return ctx, func() { stop.Stop(); cancel() }
		}, context.Canceled},
	}
	for _, o := range ops {
		for _, c := range classes {
			for _, e := range ends {
				t.Run(o.name+"/"+c.name+"/"+e.name, func(t *testing.T) {
					t.Parallel()
					key := t.Name()
					if c.held {
						if err := o.hold(context.Background(), key); err != nil {
							t.Fatalf("holder: %v", err)
						}
					}
					ctx, cancel := e.ctx()
					defer cancel()
					err := o.acquire(ctx, c.m, key)
					if ctx.Err() == nil {
						t.Fatalf("%s returned %v before its context ended", o.name, err)
					}
					if !errors.Is(err, e.want) {
						t.Errorf("%s = %v; want an error matching %v", o.name, err, e.want)
					}
					var qe *dlm.QuorumError
					for _, class := range []error{dlm.ErrNotObtained, dlm.ErrUnavailable} {
						if got, want := errors.Is(err, class), class == c.want; got != want {
							t.Errorf("%s = %v; errors.Is(err, %v) = %v, want %v", o.name, err, class, got, want)
						}
					}
					switch found := errors.As(err, &qe); {
					case c.want == nil && found:
						t.Errorf("%s = %v; errors.As found a *QuorumError %v, want none: no attempt completed", o.name, err, qe)
					case c.want != nil && !found:
						t.Errorf("%s = %v; errors.As finds no *QuorumError, want the last attempt's", o.name, err)
					case found && (!errors.Is(qe, c.want) || qe.Op != "lock"):
						t.Errorf("%s: last attempt's *QuorumError = %v (op %q); want a lock attempt matching %v", o.name, qe, qe.Op, c.want)
					}
				})
			}
		}
	}
}
