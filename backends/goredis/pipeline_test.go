package goredis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestBatchedRequests sends many requests at once, as package dlm does, and
// checks that each gets its own reply: the batches keep them apart.
func TestBatchedRequests(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	n := openNode(t, "redis+goredis://"+s.Addr())
	incr := driver.NewScript(`return redis.call('INCR', KEYS[1])`)
	const goroutines, calls = 48, 40
	prefix := fmt.Sprintf("batched-%d:", time.Now().UnixNano())
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("%s%d", prefix, g)
			for i := range calls {
				ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(10*time.Second))
				got, err := n.Eval(ctx, incr, []string{key}, nil)
				cancel()
				if want := int64(i + 1); err != nil || got != want {
					t.Errorf("INCR %s call %d = %v, %v; want %d, nil", key, i+1, got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v, err := eval(n, `return redis.call('INCR', KEYS[1])`, []string{prefix + "0"}, nil); err != nil || v != int64(calls+1) {
		t.Errorf("INCR after the batches = %v, %v; want %d, nil", v, err, calls+1)
	}
}

// TestBatchedRequestLeavesQueue checks that a request waiting behind a
// batch under way returns at its own deadline, not the batch's, and that the
// batch and later requests still get their replies.
func TestBatchedRequestLeavesQueue(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	// The read and write timeouts, and the batch's deadline, outlast the
	// test: the batch under way ends only with the server's reply.
	n := openNode(t, "redis+goredis://"+s.Addr()+"?read_timeout=1m&write_timeout=1m")
	echoScript := driver.NewScript(echo)
	if v, err := eval(n, echo, nil, []string{"warm"}); v != "warm" || err != nil {
		t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
	}
	late := lateBound(t, s)
	s.Pause()
	long, cancelLong := driver.WithNodeDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancelLong()
	first := make(chan any, 1)
	go func() {
		v, err := n.Eval(long, echoScript, nil, []string{"first"})
		if err != nil {
			first <- err
			return
		}
		first <- v
	}()
	// The first request is under way once it leads a batch.
	b := &n.(*node).batch
	for leading := false; !leading; {
		time.Sleep(time.Millisecond)
		b.mu.Lock()
		leading = b.leading
		b.mu.Unlock()
	}
	widening(t, func(t *testing.T, scale time.Duration) string {
		short, bound := 200*time.Millisecond*scale, late*scale
		ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(short))
		defer cancel()
		start := time.Now()
		_, err := n.Eval(ctx, echoScript, nil, []string{"second"})
		el := time.Since(start)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Eval behind a batch under way, %v deadline = %v after %v; want context.DeadlineExceeded", short, err, el)
		} else if el > short+bound {
			return fmt.Sprintf("Eval behind a batch under way, %v deadline, ended with it but after %v (bound %v)", short, el, short+bound)
		}
		return ""
	})
	s.Resume()
	if got := <-first; got != "first" {
		t.Errorf("the batch under way = %v; want first", got)
	}
	third, cancelThird := driver.WithNodeDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancelThird()
	if v, err := n.Eval(third, echoScript, nil, []string{"third"}); v != "third" || err != nil {
		t.Errorf("Eval after = %v, %v; want third, nil", v, err)
	}
}

// panicky makes a client's pipelines and single commands panic once armed.
type panicky struct{ armed *atomic.Bool }

func (h panicky) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h panicky) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.armed.Load() {
			time.Sleep(20 * time.Millisecond) // let other requests line up behind
			panic("hook panics")
		}
		return next(ctx, cmd)
	}
}

func (h panicky) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.armed.Load() {
			panic("hook panics")
		}
		return next(ctx, cmds)
	}
}

// TestBatchPanicReleasesWaiters checks that when the client panics sending
// a batch, the requests waiting on it return with an error rather than wait
// forever; the panic itself goes to the request that sent the batch, as a
// [driver.PanicError] (it never escapes the adapter).
func TestBatchPanicReleasesWaiters(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	var armed atomic.Bool
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	c.AddHook(panicky{&armed})
	t.Cleanup(func() { c.Close() })
	n := NewNode(c)
	armed.Store(true)
	const calls = 8
	results := make(chan string, calls)
	for range calls {
		go func() {
			defer func() {
				if p := recover(); p != nil {
					results <- fmt.Sprintf("unexpected: a panic escaped: %v", p)
				}
			}()
			ctx, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(5*time.Second))
			defer cancel()
			_, err := n.Eval(ctx, driver.NewScript(echo), nil, []string{"x"})
			var perr *driver.PanicError
			if errors.As(err, &perr) {
				results <- "panic"
				return
			}
			if errors.Is(err, errBatchPanic) {
				results <- "error"
				return
			}
			results <- fmt.Sprintf("unexpected: %v", err)
		}()
	}
	timeout := time.After(10 * time.Second)
	var panics, errs int
	for range calls {
		select {
		case r := <-results:
			switch r {
			case "panic":
				panics++
			case "error":
				errs++
			default:
				t.Errorf("Eval through a panicking client = %s; want a PanicError or %v", r, errBatchPanic)
			}
		case <-timeout:
			t.Fatalf("after 10s, %d panics and %d errors of %d calls; the others still wait", panics, errs, calls)
		}
	}
	if panics == 0 {
		t.Error("no call got a PanicError; want the panic to reach the request that sent the batch")
	}
}
