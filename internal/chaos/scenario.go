package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/dlmgo/redlock/backends/goredis" // registers "goredis"
	_ "github.com/dlmgo/redlock/backends/redigo"  // registers "redigo"
	_ "github.com/dlmgo/redlock/backends/rueidis" // registers "rueidis"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// Backends are the drivers the suite rotates across clients.
var Backends = []string{"goredis", "redigo", "rueidis"}

// NodeURL is the URL of a node at addr through backend.
func NodeURL(backend, addr string) string {
	return fmt.Sprintf("redis+%s://%s?dial_timeout=250ms", backend, addr)
}

// ServerArgs are the redis-server arguments of the suite's nodes: DEBUG
// SLEEP must be allowed from loopback.
var ServerArgs = []string{"--enable-debug-command", "local"}

// Cluster is N real redis-server processes and a proxy between every client
// and every node.
type Cluster struct {
	t       testing.TB
	Servers []*redistest.Server
	Net     *Net
}

// StartCluster starts nodes redis-servers and a proxy mesh for clients
// clients. Everything stops in t.Cleanup (the proxies before the servers).
// Each server persists every write to its own AOF, as fencing requires
// (docs/fencing.md): a restarted node keeps its fencing counters.
func StartCluster(t testing.TB, nodes, clients int) *Cluster {
	t.Helper()
	servers := make([]*redistest.Server, nodes)
	for i := range servers {
		args := append(append([]string(nil), ServerArgs...), "--dir", t.TempDir(), "--appendonly", "yes", "--appendfsync", "always")
		servers[i] = redistest.StartServer(t, redistest.WithArgs(args...))
	}
	addrs := make([]string, nodes)
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	n, err := NewNet(addrs, clients)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("closing proxies: %v", err)
		}
	})
	return &Cluster{t: t, Servers: servers, Net: n}
}

// Client is one lock client: its own locker over every node, through its
// own proxies and one backend.
type Client struct {
	ID      int
	Backend string
	Name    string
	Locker  Locker
}

// OpenNodes opens client c's nodes through backend.
func (c *Cluster) OpenNodes(client int, backend string) ([]driver.Node, error) {
	var nodes []driver.Node
	for _, a := range c.Net.Addrs(client) {
		n, err := dlm.OpenNode(NodeURL(backend, a))
		if err != nil {
			for _, n := range nodes {
				n.Close()
			}
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// ManagerClients opens a real dlm.Manager for each client, rotating the
// backends, with opts.
func (c *Cluster) ManagerClients(opts ...dlm.ManagerOption) []*Client {
	c.t.Helper()
	clients := make([]*Client, len(c.Net.Proxies))
	for i := range clients {
		b := Backends[i%len(Backends)]
		urls := make([]string, 0, len(c.Servers))
		for _, a := range c.Net.Addrs(i) {
			urls = append(urls, NodeURL(b, a))
		}
		// Fencing is on, so the checker also requires tokens to grow.
		m, err := dlm.Open(urls, append([]dlm.ManagerOption{dlm.WithFencing()}, opts...)...)
		if err != nil {
			c.t.Fatalf("dlm.Open through %s: %v", b, err)
		}
		clients[i] = &Client{ID: i, Backend: b, Name: fmt.Sprintf("c%d/%s", i, b), Locker: ManagerLocker{M: m}}
	}
	return clients
}

// ToyClients opens a toy locker for each client, rotating the backends;
// configure sets its flaw and parameters.
func (c *Cluster) ToyClients(configure func(*ToyLocker)) []*Client {
	c.t.Helper()
	clients := make([]*Client, len(c.Net.Proxies))
	for i := range clients {
		b := Backends[i%len(Backends)]
		nodes, err := c.OpenNodes(i, b)
		if err != nil {
			c.t.Fatalf("opening nodes through %s: %v", b, err)
		}
		l := &ToyLocker{Nodes: nodes, Owned: true, NodeTimeout: 100 * time.Millisecond, DriftFactor: dlm.DefaultDriftFactor, Prefix: "toy:", RetryDelay: 2 * time.Millisecond}
		configure(l)
		clients[i] = &Client{ID: i, Backend: b, Name: fmt.Sprintf("c%d/%s", i, b), Locker: l}
	}
	return clients
}

// CloseClients closes every client's locker.
func CloseClients(t testing.TB, clients []*Client) {
	t.Helper()
	for _, c := range clients {
		if err := c.Locker.Close(); err != nil {
			t.Errorf("closing %s: %v", c.Name, err)
		}
	}
}

// KeySpec is a lock key and the TTL its clients use.
type KeySpec struct {
	Name string
	TTL  time.Duration
}

// Workload is many clients contending for a few keys. Each client, in a
// loop: picks a key, takes it with Lock (bounded by LockTimeout), records the
// grant, holds it for a random time, records the release, unlocks. Some
// holds end otherwise, by chance:
//
//   - Overrun: the client acts right up to Until before letting go;
//   - Pause: the client is paused (a GC pause, a VM migration) past Until and
//     then "writes" late; its window still ends at Until, and the write is
//     counted as a late write — what fencing tokens will reject;
//   - Crash: the client abandons the lock without unlocking;
//   - Extend: the client extends the lock midway (real manager only), to
//     the key's TTL, or, with VaryExtend, to between half and twice it.
type Workload struct {
	Clients     []*Client
	Keys        []KeySpec
	History     *History
	LockTimeout time.Duration
	// Hold is the longest normal hold, as a share of the validity left.
	Hold                             float64
	Overrun, Pause, Crash, Extend    float64
	PauseBeyond                      time.Duration // how far past Until a paused client wakes
	VaryExtend                       bool
	Seed                             uint64
	stats                            Stats
	statsMu                          sync.Mutex
	attempts, grants, lateWrites     atomic.Int64
	crashes, pauses, extendsOK, extF atomic.Int64
}

// Stats are the workload's counts.
type Stats struct {
	Attempts int64            // Lock calls
	Grants   int64            // Lock calls that succeeded
	Errors   map[string]int64 // failed Lock calls by cause
	// FirstErrors holds the first error of each cause in Errors, for a
	// test that fails for want of grants to show why.
	FirstErrors map[string]string
	ByBackend   map[string]int64 // grants by backend
	Pauses      int64            // clients paused past Until
	LateWrites  int64            // writes after Until by paused clients
	Crashes     int64            // locks abandoned
	ExtendsOK   int64
	ExtendsErr  int64
}

// Run runs the workload until ctx ends and every client has let go.
func (w *Workload) Run(ctx context.Context) Stats {
	w.statsMu.Lock()
	w.stats = Stats{Errors: map[string]int64{}, FirstErrors: map[string]string{}, ByBackend: map[string]int64{}}
	w.statsMu.Unlock()
	var wg sync.WaitGroup
	for _, c := range w.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client(ctx, c, rand.New(rand.NewPCG(w.Seed, uint64(c.ID))))
		}()
	}
	wg.Wait()
	s := w.stats
	s.Attempts, s.Grants, s.LateWrites = w.attempts.Load(), w.grants.Load(), w.lateWrites.Load()
	s.Crashes, s.Pauses = w.crashes.Load(), w.pauses.Load()
	s.ExtendsOK, s.ExtendsErr = w.extendsOK.Load(), w.extF.Load()
	return s
}

// GrantsByBackend returns the grants so far by backend. It is safe to call
// while Run runs, to judge whether the workload has covered enough.
func (w *Workload) GrantsByBackend() map[string]int64 {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	out := make(map[string]int64, len(w.stats.ByBackend))
	for k, v := range w.stats.ByBackend {
		out[k] = v
	}
	return out
}

func (w *Workload) count(m map[string]int64, k string) {
	w.statsMu.Lock()
	m[k]++
	w.statsMu.Unlock()
}

// countError counts a failed Lock call by its cause, and keeps the first
// error of each cause.
func (w *Workload) countError(err error) {
	class := errorClass(err)
	w.statsMu.Lock()
	w.stats.Errors[class]++
	if _, seen := w.stats.FirstErrors[class]; !seen {
		w.stats.FirstErrors[class] = err.Error()
	}
	w.statsMu.Unlock()
}

func (w *Workload) client(ctx context.Context, c *Client, r *rand.Rand) {
	for ctx.Err() == nil {
		k := w.Keys[r.IntN(len(w.Keys))]
		lctx, cancel := context.WithTimeout(ctx, w.LockTimeout)
		start := time.Now()
		w.attempts.Add(1)
		lease, err := c.Locker.Lock(lctx, k.Name, k.TTL)
		granted := time.Now()
		cancel()
		if err != nil {
			w.countError(err)
			sleep(ctx, time.Duration(r.IntN(20))*time.Millisecond)
			continue
		}
		w.grants.Add(1)
		w.count(w.stats.ByBackend, c.Backend)
		id := w.History.Grant(k.Name, c.Name, start, granted, lease.Until(), lease.Token())
		if m, ok := lease.(interface{ Mode() Mode }); ok {
			w.History.SetMode(id, m.Mode())
		}
		w.hold(ctx, c, r, k, id, lease)
	}
}

// hold plays one hold of a lease and lets go of it.
func (w *Workload) hold(ctx context.Context, c *Client, r *rand.Rand, k KeySpec, id int, lease Lease) {
	p := r.Float64()
	switch {
	case p < w.Crash:
		w.crashes.Add(1)
		return // abandoned: the window ends at Until
	case p < w.Crash+w.Pause:
		// Paused past the validity, then acting as if it still held
		// the lock: the checker counts the window only to Until.
		w.pauses.Add(1)
		sleep(ctx, time.Until(lease.Until())+w.PauseBeyond)
		if time.Now().After(lease.Until()) {
			w.lateWrites.Add(1)
		}
	case p < w.Crash+w.Pause+w.Overrun:
		sleep(ctx, time.Until(lease.Until()))
	default:
		d := time.Duration(r.Float64() * w.Hold * float64(time.Until(lease.Until())))
		if ext, ok := lease.(Extender); ok && r.Float64() < w.Extend {
			sleep(ctx, d/2)
			ectx, cancel := context.WithTimeout(ctx, w.LockTimeout)
			ttl := k.TTL
			if w.VaryExtend {
				ttl = time.Duration((0.5 + 1.5*r.Float64()) * float64(k.TTL)).Round(time.Millisecond)
			}
			if err := ext.Extend(ectx, ttl); err == nil {
				w.extendsOK.Add(1)
				w.History.Extended(id, lease.Until())
			} else {
				w.extF.Add(1)
			}
			cancel()
			d -= d / 2
		}
		sleep(ctx, d)
	}
	w.History.Release(id, time.Now(), lease.Until())
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.LockTimeout)
	_ = lease.Unlock(uctx) // ErrLockLost after an overrun or a fault is expected
	cancel()
}

// errorClass names the cause of a failed Lock.
func errorClass(err error) string {
	switch {
	case errors.Is(err, dlm.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return "timeout"
	case errors.Is(err, dlm.ErrNotObtained):
		return "not-obtained"
	case errors.Is(err, dlm.ErrClosed):
		return "closed"
	case errors.Is(err, dlm.ErrInvalid):
		return "invalid"
	}
	return "other"
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// FormatCounts renders counts as "a:1,b:2", sorted by name, for the figures
// line.
func FormatCounts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
