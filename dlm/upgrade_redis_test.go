package dlm_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// previousScript reads one of the previous release's scripts, kept as test
// data (testdata/previous).
func previousScript(t *testing.T, name string) *driver.Script {
	t.Helper()
	src, err := os.ReadFile("testdata/previous/" + name + ".lua")
	if err != nil {
		t.Fatal(err)
	}
	return driver.NewScript(string(src))
}

// previousClient locks as a process of the previous release does, by its
// scripts: an attempt on every node at once, granted by a majority within
// the validity, released on every node that may hold it; in the fair mode
// with a place in the previous layout's line. It listens on the key's
// broadcast channel, where the previous release announced every release,
// and attempts when a release is announced there, or at its retry pace.
type previousClient struct {
	woken            chan struct{} // a release was announced
	nodes            []driver.Node
	acquire, release *driver.Script
	fair             bool
	id               string // the fair waiter's id
	ticket           int64
	ttl, nodeTimeout time.Duration
}

// newPreviousClient returns a client of the previous release for key on
// srvs, whose locks live ttl and whose requests wait nodeTimeout.
func newPreviousClient(t *testing.T, srvs []*redistest.Server, fair bool, key string, ttl, nodeTimeout time.Duration) *previousClient {
	c := &previousClient{fair: fair, ttl: ttl, nodeTimeout: nodeTimeout, woken: make(chan struct{}, 1)}
	for _, s := range srvs {
		n := respNode(t, s.Addr(), "")
		c.nodes = append(c.nodes, n)
		sub, err := n.(driver.Subscriber).Subscribe(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close() })
		if err := sub.Subscribe(context.Background(), "redlock:{"+key+"}:wake"); err != nil {
			t.Fatal(err)
		}
	}
	c.acquire, c.release = previousScript(t, "acquire"), previousScript(t, "release")
	if fair {
		c.acquire, c.release = previousScript(t, "fair_acquire"), previousScript(t, "fair_release")
		c.id = randomID(t)
	}
	return c
}

// Message wakes the client for a release announced on the broadcast
// channel (the previous release's "r<count>" or ""), not for a grant.
func (c *previousClient) Message(_, payload string) {
	if payload != "t" {
		select {
		case c.woken <- struct{}{}:
		default:
		}
	}
}

// Subscribed does nothing.
func (c *previousClient) Subscribed(string) {}

func randomID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// lock makes attempts on key until one wins or ctx ends, and returns the
// secret and the end of the validity.
func (c *previousClient) lock(ctx context.Context, t *testing.T, key string) (string, time.Time, bool) {
	rk := "redlock:{" + key + "}"
	for ctx.Err() == nil {
		secret := randomID(t)
		keys := []string{rk}
		args := []string{secret, strconv.FormatInt(c.ttl.Milliseconds(), 10)}
		if c.fair {
			keys = append(keys, rk+":line", rk+":places", rk+":tickets")
			args = append(args, c.id, "2000", strconv.FormatInt(c.ticket, 10), "1024")
		}
		select { // forget a release announced before this attempt
		case <-c.woken:
		default:
		}
		start := time.Now()
		granted := make([]bool, len(c.nodes))
		var wg sync.WaitGroup
		var mu sync.Mutex
		yes := 0
		for i, n := range c.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				flag := "0"
				if i < 2 {
					flag = "1"
				}
				rctx, cancel := context.WithTimeout(ctx, c.nodeTimeout)
				defer cancel()
				v, err := n.Eval(rctx, c.acquire, keys, append(args[:len(args):len(args)], flag))
				if err != nil {
					return
				}
				if pair, ok := v.([]any); ok && len(pair) == 2 {
					mu.Lock()
					if tk, _ := pair[1].(int64); tk > c.ticket {
						c.ticket = tk
					}
					mu.Unlock()
					v = pair[0]
				}
				if n, _ := v.(int64); n > 0 {
					mu.Lock()
					granted[i] = true
					yes++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		validity := c.ttl - time.Since(start) - c.ttl/100 - 2*time.Millisecond
		if yes >= len(c.nodes)/2+1 && validity > 0 {
			return secret, start.Add(validity), true
		}
		c.unlock(t, key, secret)
		select {
		case <-c.woken:
		case <-time.After(time.Duration(25+mrand.IntN(25)) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return "", time.Time{}, false
}

// unlock releases secret on every node.
func (c *previousClient) unlock(t *testing.T, key, secret string) {
	rk := "redlock:{" + key + "}"
	keys, args := []string{rk}, []string{secret}
	if c.fair {
		keys = append(keys, rk+":line", rk+":places")
		args = append(args, c.id)
	}
	for _, n := range c.nodes {
		ctx, cancel := context.WithTimeout(context.Background(), c.nodeTimeout)
		n.Eval(ctx, c.release, keys, append(args[:len(args):len(args)], "1"))
		cancel()
	}
}

// TestUpgradeFleet runs a fleet in the middle of an upgrade on one key:
// processes of the previous release, by its scripts (kept as test data), and
// managers of this one, in the default mode and in the fair mode, take
// turns for a few seconds. The two layouts are kept apart (the previous
// broadcast wake channel and line keys, this release's lines and manager
// channels), and what both read is the lock key itself: no two of them ever
// hold the lock at once. And every one of them obtains it: a release of this
// one hands a key to a waiter in its line only while nobody listens on the
// broadcast channel, where the previous release's waiters listen; with them
// listening, it frees the key for all and announces it there, as the
// previous release did. A refusal tells the waiters of this one that
// others listen on the broadcast channel: they keep their retry pace and
// widen their watch to that channel (wake.Waker.Widen), so that the
// previous release's announcements wake them as they wake its own.
//
// The fleet takes turns for at least span, and on until each of them has
// obtained the lock, for a bound that only keeps a starved one from
// hanging the test; node timeouts are 100ms stretched to the pace measured
// on the run, TTLs twenty of them.
func TestUpgradeFleet(t *testing.T) {
	t.Parallel()
	const span = 3 * time.Second
	for _, fair := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "fair"}[fair], func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartServers(t, 3)
			nt := pacedNodeTimeout(t, srvs[0], 100*time.Millisecond)
			ttl := 20 * nt
			var opts []dlm.ManagerOption
			if fair {
				opts = append(opts, dlm.WithFairness(dlm.Fairness{}))
			}
			opts = append(opts, dlm.WithTTL(ttl), dlm.WithNodeTimeout(nt))
			bound := 10 * max(span, 30*nt)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			var inside atomic.Int32
			var overlaps atomic.Int64
			critical := func(until time.Time) {
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(time.Millisecond)
				if time.Now().After(until) {
					t.Errorf("a critical section outlived its lock's validity")
				}
				inside.Add(-1)
			}
			var wg sync.WaitGroup
			grants := make([]atomic.Int64, 4)
			for i := range 2 {
				m := redisManager(t, srvs, opts...) // the default retry pace
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						l, err := m.Lock(ctx, "fleet")
						if err != nil {
							continue
						}
						critical(l.Until())
						grants[i].Add(1)
						l.Unlock(context.Background())
					}
				}()
			}
			for i := 2; i < 4; i++ {
				c := newPreviousClient(t, srvs, fair, "fleet", ttl, nt)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						secret, until, ok := c.lock(ctx, t, "fleet")
						if !ok {
							return
						}
						critical(until)
						grants[i].Add(1)
						c.unlock(t, "fleet", secret)
					}
				}()
			}
			// Stop after span once everyone has obtained the lock.
			start := time.Now()
			for ctx.Err() == nil {
				everyone := true
				for i := range grants {
					everyone = everyone && grants[i].Load() > 0
				}
				if everyone && time.Since(start) >= span {
					break
				}
				time.Sleep(10 * time.Millisecond) // polling the counts, not a timing assertion
			}
			cancel()
			took := time.Since(start)
			wg.Wait()
			if n := overlaps.Load(); n > 0 {
				t.Errorf("%d grants overlapped another holder's", n)
			}
			for i := range grants {
				who := "manager of this release"
				if i >= 2 {
					who = "process of the previous release"
				}
				if n := grants[i].Load(); n < 1 {
					t.Errorf("%s %d obtained the lock %d times in %v; want progress for everyone", who, i, n, took.Round(time.Millisecond))
				}
			}
			t.Logf("grants in %v (two managers, two previous processes): %d %d %d %d", took.Round(time.Millisecond),
				grants[0].Load(), grants[1].Load(), grants[2].Load(), grants[3].Load())
		})
	}
}
