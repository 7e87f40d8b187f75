package dlmtest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// runIDProbes is how many locks on free keys each case of
// testHostileRunID takes in a row, once the nodes are settled.
const runIDProbes = 5

// testHostileRunID checks that a node that answers another node's run_id
// denies no service, and counts as what it is: with nodes A and B healthy
// and a third, F, a proxy that says A's run_id,
//
//   - F serving nothing else, all three reachable at Open: Open succeeds
//     (it does not take A and F for one server on F's word), and every
//     lock on a free key is granted by A and B;
//   - the same, but A unreachable at Open, so that F said the run_id
//     first: once A answers, it is not taken for F's duplicate, and every
//     lock is granted again, after at most the attempts the first contact
//     with A takes;
//   - F a working server of its own (a proxy to a third redis-server C)
//     that lies about its run_id: it counts as itself, so with B down, A
//     and F still grant every lock, and the key is on C.
func (s *secure) testHostileRunID(t *testing.T) {
	srvs := redistest.StartServers(t, 3, redistest.WithArgs("--bind", "127.0.0.1"))
	a, b, c := srvs[0], srvs[1], srvs[2]
	runID := serverRunID(t, a)
	nodeURL := func(addr string) string { return "redis+" + s.driver + "://" + addr + "?dial_timeout=1s" }
	logger := slog.New(slog.NewTextHandler(s.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	lied := func(t *testing.T, liar *runIDLiar) {
		t.Helper()
		if liar.lied.Load() == 0 {
			t.Errorf("the node at %s was never asked its run_id: the test tested nothing", liar.Addr())
		}
	}
	open := func(t *testing.T, urls ...string) *dlm.Manager {
		t.Helper()
		m, err := dlm.Open(urls, dlm.WithTTL(s.ttl()), dlm.WithNodeTimeout(s.nodeTimeout), dlm.WithLogger(logger))
		s.sawErr(err)
		if err != nil {
			t.Fatalf("dlm.Open with a node that says another's run_id = %v; want a manager", err)
		}
		return m
	}

	t.Run("ServesNothing", func(t *testing.T) {
		liar := startRunIDLiar(t, c.Addr(), runID, false)
		m := open(t, nodeURL(a.Addr()), nodeURL(b.Addr()), nodeURL(liar.Addr()))
		defer m.Close()
		s.lockEach(t, m, "runid-nothing").Unlock(context.Background())
		lied(t, liar)
	})

	t.Run("RealNodeUnreachableAtOpen", func(t *testing.T) {
		liar := startRunIDLiar(t, c.Addr(), runID, false)
		// A is reached at 127.0.0.2, where it does not listen yet: F says
		// A's run_id first.
		aAt2 := fmt.Sprintf("127.0.0.2:%d", a.Port())
		m := open(t, nodeURL(aAt2), nodeURL(b.Addr()), nodeURL(liar.Addr()))
		defer m.Close()
		if _, err := a.Do("CONFIG", "SET", "bind", "127.0.0.1 127.0.0.2"); err != nil {
			t.Fatal(err)
		}
		s.lockEach(t, m, "runid-unreachable").Unlock(context.Background())
		lied(t, liar)
	})

	t.Run("LiesButServes", func(t *testing.T) {
		liar := startRunIDLiar(t, c.Addr(), runID, true)
		m := open(t, nodeURL(a.Addr()), nodeURL(b.Addr()), nodeURL(liar.Addr()))
		defer m.Close()
		b.Kill()
		l := s.lockEach(t, m, "runid-serves")
		defer l.Unlock(context.Background())
		lied(t, liar)
		v, err := c.Do("EXISTS", dlm.DefaultKeyPrefix+"{runid-serves-0}")
		if err != nil || v != int64(1) {
			t.Errorf("EXISTS on %s, behind the lying node = %v, %v; want the lock's key there: the node counts as itself", c.Addr(), v, err)
		}
	})
}

// settleTime bounds the attempts lockEach lets fail while the nodes are
// identified: the asking of a node's run_id and its probe, which run on
// after an attempt gives up on them, end within four node timeouts
// (identifyTimeout in package dlm); then the node that says the run_id
// first may count only from the attempt after that.
func (s *secure) settleTime() time.Duration { return 6 * s.nodeTimeout }

// lockEach takes runIDProbes locks on free keys named prefix-0, prefix-1,
// ... with TryLock, the first retried for settleTime while the nodes are
// identified, and fails the test unless it is granted then, and every
// later one at once. It returns the first lock, held, for the caller to
// release; the others it releases.
func (s *secure) lockEach(t *testing.T, m *dlm.Manager, prefix string) *dlm.Lock {
	t.Helper()
	ctx := context.Background()
	var failed []string
	var first *dlm.Lock
	for deadline := time.Now().Add(s.settleTime()); ; {
		l, err := m.TryLock(ctx, prefix+"-0")
		s.sawErr(err)
		if err == nil {
			s.sawLock(l)
			first = l
			break
		}
		failed = append(failed, err.Error())
		if time.Now().After(deadline) {
			t.Fatalf("%d TryLock on a free key with two healthy nodes of three failed in %v:\n%s", len(failed), s.settleTime(), strings.Join(failed, "\n"))
		}
	}
	if len(failed) > 0 {
		t.Logf("granted after %d attempts", len(failed)+1)
	}
	for i := 1; i < runIDProbes; i++ {
		l, err := m.TryLock(ctx, fmt.Sprintf("%s-%d", prefix, i))
		s.sawErr(err)
		if err != nil {
			t.Errorf("TryLock on free key %d of %d, the nodes settled = %v; want it granted", i+1, runIDProbes, err)
			continue
		}
		s.sawLock(l)
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock = %v", err)
		}
	}
	return first
}

// serverRunID returns srv's run_id, from INFO server.
func serverRunID(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	v, err := srv.Do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := v.(string)
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id
		}
	}
	t.Fatalf("INFO server of %s has no run_id:\n%s", srv.Addr(), info)
	return ""
}
