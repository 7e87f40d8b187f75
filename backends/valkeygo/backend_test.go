package valkeygo_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/dlmgo/redlock/backends/valkeygo"
	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
	"github.com/dlmgo/redlock/internal/testflags"
)

// The suites run on redis-server 7.0, which speaks what Valkey speaks:
// Debian's packages have no valkey-server.

// TestSuites runs dlmtest's suites through this backend: the node suite on
// nodes from URLs and on clients of the user's (with valkey-go's defaults,
// which do not always pipeline, and over RESP2), the manager suite on one
// server per node and on Clusters, WithReplicaAck, a Sentinel failover, the
// driver suite (passwords, ACL users, databases, servers down, restarted or
// busy, replies, contexts, TLS), the security suite (TLS with ACL users and
// the least-privilege rules), the URL errors, and the Locker and shared
// suites on a manager of three nodes.
func TestSuites(t *testing.T) {
	url := func(addr string) string { return "redis+valkey://" + addr }
	dial := func(t *testing.T, addr string) driver.Node { return open(t, url(addr)) }
	ofClient := func(resp2 bool) func(t *testing.T) {
		return func(t *testing.T) {
			s := redistest.StartServer(t)
			opt := valkey.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, AlwaysRESP2: resp2}
			dlmtest.TestNode(t, func(t *testing.T) driver.Node { return wrap(t, opt) })
		}
	}
	for _, suite := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"NodeFromURL", func(t *testing.T) {
			s := redistest.StartServer(t)
			dlmtest.TestNode(t, func(t *testing.T) driver.Node { return open(t, url(s.Addr())) })
		}},
		{"NodeOfClient", ofClient(false)},
		{"NodeOfClientRESP2", ofClient(true)},
		{"Manager", func(t *testing.T) { dlmtest.TestManager(t, dial) }},
		{"ManagerOnClusters", func(t *testing.T) {
			dlmtest.TestManagerOnClusters(t, func(t *testing.T, addr string) driver.Node {
				seeds := strings.Split(addr, ",")
				n := open(t, url(seeds[0]+"?cluster=true&addr="+strings.Join(seeds[1:], "&addr=")))
				if n.Addr() != addr {
					t.Errorf("Addr() of a cluster node = %q; want %q", n.Addr(), addr)
				}
				return n
			})
		}},
		{"ReplicaAck", func(t *testing.T) { dlmtest.TestReplicaAck(t, dial) }},
		{"SentinelFailover", func(t *testing.T) {
			dlmtest.TestSentinelFailover(t, func(t *testing.T, addr string) driver.Node {
				return open(t, url(addr+"?sentinel_master="+redistest.SentinelMaster))
			})
		}},
		{"Driver", func(t *testing.T) { dlmtest.TestDriver(t, valkeygo.Name) }},
		{"DriverConns", func(t *testing.T) { dlmtest.TestDriverConns(t, valkeygo.Name) }},
		{"DriverSlowDial", func(t *testing.T) { dlmtest.TestDriverSlowDial(t, valkeygo.Name) }},
		{"Security", func(t *testing.T) { dlmtest.TestSecurity(t, valkeygo.Name) }},
		{"URLErrors", func(t *testing.T) { dlmtest.TestDriverURLErrors(t, valkeygo.Name, valkeygo.Driver{}) }},
		{"Locker", func(t *testing.T) {
			servers := redistest.StartServers(t, 3)
			timeout := nodeTimeout(t, servers, 200*time.Millisecond)
			dlmtest.TestLocker(t, func(t *testing.T) dlm.Locker {
				return manager(t, servers, dlm.WithKeyPrefix("locker:"), dlm.WithNodeTimeout(timeout))
			})
		}},
		{"Shared", func(t *testing.T) {
			servers := redistest.StartServers(t, 3)
			// A permit needs every node: a generous node timeout.
			timeout := nodeTimeout(t, servers, 500*time.Millisecond)
			dlmtest.TestShared(t, func(t *testing.T) *dlm.Manager {
				return manager(t, servers, dlm.WithKeyPrefix("shared:"), dlm.WithNodeTimeout(timeout))
			})
		}},
	} {
		t.Run(suite.name, func(t *testing.T) {
			t.Parallel()
			suite.run(t)
		})
	}
}

// TestClusterClient checks the node of a client in cluster mode, which
// valkey-go does not report as such: it says it is sharded (and the node
// of a single client says it is not), so that a manager refuses a lock
// over keys of two slots up front with ErrInvalid; sent anyway, such a
// script makes valkey-go's command builder panic, which fails the call
// with a driver.PanicError instead of the program.
func TestClusterClient(t *testing.T) {
	t.Parallel()
	rc := redistest.StartRedisCluster(t)
	n := wrap(t, valkey.ClientOption{InitAddress: rc.Addrs(), DisableCache: true})
	single := wrap(t, valkey.ClientOption{InitAddress: rc.Addrs()[:1], DisableCache: true, ForceSingleClient: true})
	if !n.(driver.Sharded).Sharded() || single.(driver.Sharded).Sharded() {
		t.Errorf("Sharded() of a cluster client's node, a single client's = %v, %v; want true, false",
			n.(driver.Sharded).Sharded(), single.(driver.Sharded).Sharded())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var perr *driver.PanicError
	if _, err := n.Eval(ctx, driver.NewScript("return 1"), []string{"a", "b"}, nil); !errors.As(err, &perr) || !strings.Contains(perr.Value, "slot") {
		t.Errorf("Eval over keys of two slots = %v; want a *driver.PanicError about slots", err)
	}
	m, err := dlm.New([]driver.Node{n})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tc := range []struct {
		keys []string
		want error
	}{{[]string{"a", "b"}, dlm.ErrInvalid}, {[]string{"{o}:a", "{o}:b"}, nil}} {
		l, err := m.TryLockAll(ctx, tc.keys)
		if !errors.Is(err, tc.want) {
			t.Errorf("TryLockAll(%q) = %v; want %v", tc.keys, err, tc.want)
		}
		if err == nil {
			l.Unlock(ctx)
		}
	}
}

// TestMixedNodes checks a manager whose nodes run on different clients: a
// node of this backend from a URL, one of a valkey-go client of the
// user's, and one of another client (the core's own RESP node). A lock
// takes its key on every server (a quorum at once, the last one when its
// reply is in), and its release frees all three.
func TestMixedNodes(t *testing.T) {
	t.Parallel()
	servers := redistest.StartServers(t, 3)
	cfg, err := driver.ParseURL("redis://" + servers[2].Addr())
	if err != nil {
		t.Fatal(err)
	}
	other := resp.NewNode(cfg)
	t.Cleanup(func() { other.Close() })
	nodes := []driver.Node{
		open(t, "redis+valkey://"+servers[0].Addr()),
		wrap(t, valkey.ClientOption{InitAddress: []string{servers[1].Addr()}, DisableCache: true}),
		other,
	}
	m, err := dlm.New(nodes, dlm.WithKeyPrefix("mixed:"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	// TryLock returns at a quorum; the third node's reply may still be on
	// its way (a first dial under load), so each server is given until the
	// test's deadline to show the key.
	for i, s := range servers {
		var v any
		var err error
		for ctx.Err() == nil {
			if v, err = s.Do("EXISTS", "mixed:{k}"); err == nil && v == int64(1) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil || v != int64(1) {
			t.Errorf("server %d (%s) after TryLock: EXISTS mixed:{k} = %v, %v; want 1", i, nodes[i].Addr(), v, err)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	for i, s := range servers {
		if v, err := s.Do("EXISTS", "mixed:{k}"); err != nil || v != int64(0) {
			t.Errorf("server %d after Unlock: EXISTS mixed:{k} = %v, %v; want 0", i, v, err)
		}
	}
}

// TestUntrustedCertificate checks that a server whose certificate does not
// verify fails Open, as with rueidis: a setting to fix, not a server down.
// (The goredis and redigo drivers fail the calls instead, so the driver
// suite leaves the case out.)
func TestUntrustedCertificate(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t, redistest.WithTLS())
	// A handshake that outlasts the dial timeout reads as a server out of
	// reach, which Open leaves to connect on first use: a dial timeout far
	// beyond the pace measured on the run lets the handshake end, and the
	// certificate be refused.
	dial := redistest.MeasurePace(t, s).Stretch(time.Second) * 10
	n, err := dlm.OpenNode("rediss+valkey://" + s.Addr() + "?dial_timeout=" + dial.String())
	if err == nil {
		n.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("dlm.OpenNode(rediss:// without the CA) = %v; want a certificate error", err)
	}
}

// open opens a node from url through the registry, as dlm.Open does, and
// closes it with t.
func open(t testing.TB, url string) driver.Node {
	t.Helper()
	n, err := dlm.OpenNode(url)
	if err != nil {
		t.Fatalf("dlm.OpenNode(%q): %v", driver.Redact(url), err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// wrap returns a node over a client of the user's, built with opt, which t
// closes after the node.
func wrap(t testing.TB, opt valkey.ClientOption) driver.Node {
	t.Helper()
	c, err := valkey.NewClient(opt)
	if err != nil {
		t.Fatalf("valkey.NewClient(%v): %v", opt.InitAddress, err)
	}
	t.Cleanup(c.Close)
	return valkeygo.NewNode(c)
}

// manager returns a manager over a node of this backend on each server,
// closed with t.
// maxNodeTimeout is the longest node timeout of the managers given to the
// Locker and shared suites: half the 2 s TTL of their short-lived locks,
// which a node timeout must stay below.
const maxNodeTimeout = time.Second

// nodeTimeout returns the node timeout of a manager over servers: quiet on
// a quiet machine, stretched to the pace measured through the servers now
// (see redistest.Pace.Stretch), at most maxNodeTimeout.
func nodeTimeout(t *testing.T, servers []*redistest.Server, quiet time.Duration) time.Duration {
	t.Helper()
	var p redistest.Pace
	for _, s := range servers {
		p = p.Max(redistest.MeasurePace(t, s))
	}
	d := min(p.Stretch(quiet), maxNodeTimeout)
	t.Logf("pace %v: node timeout %v", p, d)
	return d
}

func manager(t *testing.T, servers []*redistest.Server, opts ...dlm.ManagerOption) *dlm.Manager {
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = "redis+valkey://" + s.Addr()
	}
	m, err := dlm.Open(urls, opts...)
	if err != nil {
		t.Fatalf("dlm.Open: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestMain runs four parallel tests at once unless -parallel says: they
// wait on TTLs and servers far more than they compute.
func TestMain(m *testing.M) {
	testflags.DefaultParallel(4)
	os.Exit(m.Run())
}
