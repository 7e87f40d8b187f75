package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// The safety matrix's timing. Every margin is a multiple of a configured
// timeout or TTL, so that a loaded machine makes trials void, not wrong.
const (
	safetyNodeTimeout = 100 * time.Millisecond
	pauseTTL          = 300 * time.Millisecond // scenarios 1 and 6
	jumpTTL           = time.Second            // scenario 2: A's validity spans B's grant
	restartTTL        = time.Second            // scenario 3: A's validity spans a restart
	delayTTL          = 200 * time.Millisecond // scenario 4
	delayReplies      = 300 * time.Millisecond // scenario 4, the toy's: past delayTTL
	// Scenario 4 with the manager, whose node timeout must be below the TTL:
	// the replies come after the validity (the TTL less the drift of
	// delayDrift, 452 ms of the second) and within the node timeout, so A
	// learns of a grant it may no longer use. Each attempt costs one delayed
	// round trip: A's connections and the servers' scripts are warm before
	// the delay starts.
	delayManagerTTL     = time.Second
	delayManagerReplies = 600 * time.Millisecond
	delayNodeTimeout    = 900 * time.Millisecond
	delayDrift          = 0.45
	failoverLockTTL     = 20 * time.Second // scenario 5: A's validity spans a failover
)

// lockKey is the node key of lock name under the default prefix.
func lockKey(name string) string { return "redlock:{" + name + "}" }

// openManager opens a manager over addrs through backend.
func openManager(t testing.TB, backend string, addrs []string, opts ...dlm.ManagerOption) *dlm.Manager {
	t.Helper()
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = NodeURL(backend, a)
	}
	m, err := dlm.Open(urls, append([]dlm.ManagerOption{dlm.WithNodeTimeout(safetyNodeTimeout)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func addrsOf(servers []*redistest.Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	return out
}

// pauseHolder is scenarios 1 and 6: a holder in its own process takes the
// lock, checks that it may act, and is frozen (SIGSTOP) before it writes; a
// rival in the test process takes the lock once the holder's validity has
// ended and writes; the holder is continued (SIGCONT) and writes. With
// autoExtend, the holder keeps its lock under WithAutoExtend, which cannot
// run while the process is frozen, and its Lost must be closed when it
// wakes.
func pauseHolder(t *testing.T, trials int, fenced, autoExtend bool) tally {
	servers := redistest.StartServers(t, 3, redistest.WithArgs(ServerArgs...))
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = NodeURL("goredis", s.Addr())
	}
	h := startHolder(t, urls)
	var ropts []dlm.ManagerOption
	if fenced {
		ropts = append(ropts, dlm.WithFencing())
	}
	rival := openManager(t, "redigo", addrsOf(servers), ropts...)
	var tl tally
	for i := 0; tl.Trials < trials; i++ {
		key := fmt.Sprintf("pause-%d", i)
		hist, res := NewHistory(), &resource{fenced: fenced}
		start := time.Now()
		hl, err := h.lock(key, pauseTTL, fenced, autoExtend)
		if err != nil {
			t.Logf("holder's TryLock: %v", err)
			tl.void(t, trials)
			continue
		}
		granted := time.Now()
		checkAt := time.Now()
		valid, left := h.check()
		if !valid || granted.After(checkAt.Add(left)) {
			tl.void(t, trials) // the machine was too slow: the validity ended before the check
			h.send("unlock")
			h.reply("unlocked", holderReplyTimeout)
			continue
		}
		until := checkAt.Add(left)
		hist.Grant(key, "holder", start, granted, until, hl.token)
		h.signal(syscall.SIGSTOP)
		waitStopped(t, h.cmd.Process.Pid)
		h.send("write") // read once the holder runs again
		time.Sleep(time.Until(until))
		ctx, cancel := context.WithTimeout(context.Background(), 10*pauseTTL+holderReplyTimeout)
		rstart := time.Now()
		l, err := rival.Lock(ctx, key, dlm.WithTTL(pauseTTL))
		cancel()
		if err != nil {
			t.Fatalf("the rival's Lock while the holder is frozen: %v", err)
		}
		bid := hist.Grant(key, "rival", rstart, time.Now(), l.Until(), l.Token())
		res.write(2, l.Token(), l.GrantID())
		h.signal(syscall.SIGCONT)
		f := h.reply("write", holderReplyTimeout)
		if len(f) != 3 {
			t.Fatalf("holder's write: %v", f)
		}
		if !res.write(1, hl.token, hl.grant) {
			tl.note("late write refused")
		}
		if autoExtend {
			h.send("lost")
			if f := h.reply("lost", holderReplyTimeout); len(f) == 2 && f[1] == "1" {
				tl.note("Lost closed on waking")
			} else {
				t.Errorf("trial %d: the frozen holder's Lost is still open after it woke and the rival took the lock", i)
			}
		}
		hist.Release(bid, time.Now(), l.Until())
		_ = l.Unlock(context.Background())
		h.send("unlock")
		h.reply("unlocked", holderReplyTimeout)
		tl.add(hist, res)
	}
	return tl
}

// twoClients is three nodes and two in-process managers, A (goredis) and B
// (redigo), each behind its own proxy to every node.
type twoClients struct {
	servers []*redistest.Server
	net     *Net
	a, b    *dlm.Manager
}

func startTwoClients(t *testing.T, servers []*redistest.Server, aOpts, bOpts []dlm.ManagerOption) *twoClients {
	t.Helper()
	n, err := NewNet(addrsOf(servers), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return &twoClients{
		servers: servers, net: n,
		a: openManager(t, "goredis", n.Addrs(0), aOpts...),
		b: openManager(t, "redigo", n.Addrs(1), bOpts...),
	}
}

// lockReaching makes m (client c) try key while it can reach only the nodes
// in reach; the other nodes' proxies drop its connections until the
// attempt's node timeout has passed, so that no late request reaches them.
func (tc *twoClients) lockReaching(c int, key string, opts []dlm.Option, reach ...int) (*dlm.Lock, time.Time, error) {
	m := tc.a
	if c == 1 {
		m = tc.b
	}
	var cut []*Proxy
	for i, p := range tc.net.Proxies[c] {
		if !containsInt(reach, i) {
			p.Drop()
			cut = append(cut, p)
		}
	}
	start := time.Now()
	l, err := m.TryLock(context.Background(), key, opts...)
	time.Sleep(time.Until(start.Add(2 * safetyNodeTimeout)))
	for _, p := range cut {
		p.Heal()
	}
	return l, start, err
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// clockJump is scenario 2: A holds the lock on nodes 0 and 1 (node 2 cut
// off from A); node 1's clock jumps forward past the key's TTL, modelled by
// expiring A's key there at the jump's moment (PEXPIRE through an admin
// connection: Redis expires by the wall clock, and libfaketime does not run
// redis-server here); B, reaching every node, is granted on nodes 1 and 2
// while A's validity runs. Both write; A writes again.
func clockJump(t *testing.T, trials int, fenced bool) tally {
	servers := redistest.StartServers(t, 3, redistest.WithArgs(ServerArgs...))
	var opts []dlm.ManagerOption
	if fenced {
		opts = append(opts, dlm.WithFencing())
	}
	tc := startTwoClients(t, servers, opts, opts)
	var tl tally
	for i := 0; tl.Trials < trials; i++ {
		key := fmt.Sprintf("jump-%d", i)
		hist, res := NewHistory(), &resource{fenced: fenced}
		a, astart, err := tc.lockReaching(0, key, []dlm.Option{dlm.WithTTL(jumpTTL)}, 0, 1)
		if err != nil {
			t.Logf("A's TryLock on nodes 0, 1: %v", err)
			tl.void(t, trials)
			continue
		}
		aid := hist.Grant(key, "A", astart, astart, a.Until(), a.Token())
		res.write(1, a.Token(), a.GrantID())
		if _, err := servers[1].Do("PEXPIRE", lockKey(key), "0"); err != nil {
			t.Fatalf("PEXPIRE on node 1: %v", err)
		}
		b, bstart, err := tc.lockReaching(1, key, []dlm.Option{dlm.WithTTL(jumpTTL)}, 0, 1, 2)
		if err == nil {
			hist.Grant(key, "B", bstart, time.Now(), b.Until(), b.Token())
			res.write(2, b.Token(), b.GrantID())
		} else if !errors.Is(err, dlm.ErrNotObtained) {
			t.Logf("B's TryLock: %v", err)
		}
		if time.Now().After(a.Until()) {
			tl.void(t, trials) // too slow: A's validity ended before its second write
		} else {
			if !res.write(1, a.Token(), a.GrantID()) {
				tl.note("A's write after B refused")
			}
			hist.Release(aid, time.Now(), a.Until())
			tl.add(hist, res)
		}
		_ = a.Unlock(context.Background())
		if b != nil {
			_ = b.Unlock(context.Background())
		}
	}
	return tl
}

// restartConfig is one configuration of scenario 3.
type restartConfig struct {
	appendfsync string // "" for no persistence, else everysec or always
	guard       bool
	fenced      bool
}

// earlierGrants grants key twice on nodes 0 and 1 only, for the fenced
// cells' construction (node 2's counter lags), and reports whether both
// grants were obtained.
func earlierGrants(t *testing.T, tc *twoClients, key string) bool {
	t.Helper()
	for range 2 {
		l, _, err := tc.lockReaching(0, key, nil, 0, 1)
		if err != nil {
			t.Logf("A's earlier grant on nodes 0, 1: %v", err)
			return false
		}
		_ = l.Unlock(context.Background())
	}
	return true
}

// restartEmpty is scenario 3: A holds the lock on nodes 0 and 1 (node 2
// cut off from A) without having written yet; node 1 is killed (SIGKILL)
// and started again at once, with its AOF if it has one; B, reaching every
// node, tries the lock while A's validity runs. If B is granted it writes;
// then A writes. With fencing, the key has first been granted twice on
// nodes 0 and 1 only, so that node 2's counter lags: a node that lost its
// counter then lets B's token fall below A's.
func restartEmpty(t *testing.T, trials int, cfg restartConfig) tally {
	servers := make([]*redistest.Server, 3)
	others := redistest.StartServers(t, 2, redistest.WithArgs(ServerArgs...))
	servers[0], servers[2] = others[0], others[1]
	args := append([]string(nil), ServerArgs...)
	if cfg.appendfsync != "" {
		args = append(args, "--dir", t.TempDir(), "--appendonly", "yes", "--appendfsync", cfg.appendfsync)
	}
	servers[1] = redistest.StartServer(t, redistest.WithArgs(args...))
	opts := []dlm.ManagerOption{dlm.WithTTL(restartTTL)}
	if cfg.guard {
		opts = append(opts, dlm.WithRestartGuard(restartTTL))
	}
	if cfg.fenced {
		opts = append(opts, dlm.WithFencing())
	}
	tc := startTwoClients(t, servers, opts, opts)
	restarted := time.Now()
	var tl tally
	for i := 0; tl.Trials < trials; i++ {
		if cfg.guard {
			// Every node must count for A: wait out the window since
			// node 1's last start (and the others', the first time).
			// INFO counts uptime in whole seconds, so the guard counts
			// a node up to a second after the window (here a whole
			// second).
			time.Sleep(time.Until(restarted.Add(restartTTL + time.Second + restartMargin)))
		}
		key := fmt.Sprintf("restart-%d", i)
		hist, res := NewHistory(), &resource{fenced: cfg.fenced}
		if cfg.fenced && !earlierGrants(t, tc, key) {
			// A failed setup (a connection the last restart broke, a node
			// too slow for the TTL) proves nothing either way: run the
			// trial again, as any trial too slow for its construction.
			tl.void(t, trials)
			continue
		}
		a, astart, err := tc.lockReaching(0, key, nil, 0, 1)
		if err != nil {
			t.Logf("A's TryLock on nodes 0, 1: %v", err)
			tl.void(t, trials)
			continue
		}
		aid := hist.Grant(key, "A", astart, astart, a.Until(), a.Token())
		servers[1].Restart()
		restarted = time.Now()
		kept := nodeHas(t, servers[1], lockKey(key))
		if kept {
			tl.note("A's key kept by the restarted node")
		}
		b, bstart, err := tc.lockReaching(1, key, nil, 0, 1, 2)
		switch {
		case err == nil:
			hist.Grant(key, "B", bstart, time.Now(), b.Until(), b.Token())
			res.write(2, b.Token(), b.GrantID())
		case errors.Is(err, dlm.ErrNodeRestarted):
			tl.note("B refused: node restarted")
		case errors.Is(err, dlm.ErrNotObtained):
			tl.note("B refused: held")
		default:
			t.Logf("B's TryLock: %v", err)
		}
		if time.Now().After(a.Until()) {
			tl.void(t, trials) // too slow: A's validity ended before B's attempt was over
		} else {
			if !res.write(1, a.Token(), a.GrantID()) {
				tl.note("A's write refused")
			}
			hist.Release(aid, time.Now(), a.Until())
			tl.add(hist, res)
		}
		_ = a.Unlock(context.Background())
		if b != nil {
			_ = b.Unlock(context.Background())
		}
	}
	return tl
}

// nodeHas reports whether s holds key, waiting while it loads its AOF.
func nodeHas(t *testing.T, s *redistest.Server, key string) bool {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		v, err := s.Do("EXISTS", key)
		if err == nil {
			return v == int64(1)
		}
		if !strings.HasPrefix(err.Error(), "LOADING") || time.Now().After(end) {
			t.Fatalf("EXISTS on the restarted node: %v", err)
		}
	}
}

// delayedReplies is scenario 4: every reply to A is delayed (the proxy
// holds it back) past A's validity: past the TTL for the toy, whose node
// timeout may exceed it; for the manager, whose node timeout must be below
// the TTL, past the TTL less the drift, so that A's keys have expired on the
// nodes, or soon will, by the time A learns they were set. B takes the lock
// as soon as it can. If A
// counts itself granted, it writes, B writes, and A writes again. toy
// replaces both managers with [ToyLocker]s, A with the NoValidityCheck flaw:
// the control that shows the harness sees the failure.
func delayedReplies(t *testing.T, trials int, fenced, toy bool) tally {
	servers := redistest.StartServers(t, 3, redistest.WithArgs(ServerArgs...))
	n, err := NewNet(addrsOf(servers), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	delay, ttl := delayReplies, delayTTL
	var a, b Locker
	if toy {
		cl := (&Cluster{t: t, Servers: servers, Net: n}).ToyClients(func(l *ToyLocker) { l.NodeTimeout = 4 * delayReplies })
		cl[0].Locker.(*ToyLocker).Flaw = NoValidityCheck
		cl[1].Locker.(*ToyLocker).NodeTimeout = safetyNodeTimeout
		t.Cleanup(func() { CloseClients(t, cl) })
		a, b = cl[0].Locker, cl[1].Locker
	} else {
		delay, ttl = delayManagerReplies, delayManagerTTL
		var opts []dlm.ManagerOption
		if fenced {
			opts = append(opts, dlm.WithFencing())
		}
		a = ManagerLocker{M: openManager(t, "goredis", n.Addrs(0), append(opts, dlm.WithNodeTimeout(delayNodeTimeout), dlm.WithDriftFactor(delayDrift))...)}
		b = ManagerLocker{M: openManager(t, "redigo", n.Addrs(1), opts...)}
		// Warm: A's connections open, the scripts in the servers' caches.
		warm, err := a.TryLock(context.Background(), "delay-warm", ttl)
		if err != nil {
			t.Fatalf("A's TryLock before the delay: %v", err)
		}
		if err := warm.Unlock(context.Background()); err != nil {
			t.Fatalf("A's Unlock before the delay: %v", err)
		}
	}
	for _, p := range n.Proxies[0] {
		p.SetLatency(0, delay)
	}
	var tl tally
	for i := 0; tl.Trials < trials; i++ {
		key := fmt.Sprintf("delay-%d", i)
		hist, res := NewHistory(), &resource{fenced: fenced}
		astart := time.Now()
		la, err := a.TryLock(context.Background(), key, ttl)
		if err != nil {
			if errors.Is(err, dlm.ErrInvalid) {
				t.Fatalf("A's TryLock: %v", err)
			}
			if !errors.Is(err, dlm.ErrNotObtained) {
				t.Logf("A's TryLock: %v", err)
				tl.void(t, trials)
				continue
			}
			tl.note("A refused by the validity check")
		} else {
			hist.Grant(key, "A", astart, time.Now(), la.Until(), la.Token())
			res.write(1, la.Token(), grantOf(la))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*ttl+holderReplyTimeout)
		bstart := time.Now()
		lb, err := b.Lock(ctx, key, ttl)
		cancel()
		if err != nil {
			t.Fatalf("B's Lock: %v", err)
		}
		hist.Grant(key, "B", bstart, time.Now(), lb.Until(), lb.Token())
		res.write(2, lb.Token(), grantOf(lb))
		if la != nil && time.Now().Before(la.Until()) {
			res.write(1, la.Token(), grantOf(la))
		}
		tl.add(hist, res)
		_ = lb.Unlock(context.Background())
		if la != nil {
			_ = la.Unlock(context.Background())
		}
	}
	return tl
}

// grantOf returns a lease's grant id, 0 for a toy lease.
func grantOf(l Lease) uint64 {
	if m, ok := l.(managerLease); ok {
		return m.GrantID()
	}
	return 0
}
