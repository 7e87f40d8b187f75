package dlmtest

import (
	"context"
	"github.com/dlmgo/redlock/dlm/redistest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// failoverTTL is the lock's TTL in TestSentinelFailover: long enough for
// the clients to follow a failover (a second or two, more on a loaded
// machine) before the lock would need an extension they cannot make.
const failoverTTL = 12 * time.Second

// TestSentinelFailover runs [dlm.Manager.Do] on one node that is a master
// with two replicas under Sentinel ([StartSentinel]). While fn runs the
// master fails (it is frozen, as a stalled or cut-off machine, and stays
// so) and Sentinel promotes a replica: the lock, acknowledged by a replica
// ([dlm.WithReplicaAck]), survives on the promoted replica, Do's extensions
// follow the new master, fn runs to its end with its context live, and a
// rival client polling the same node never obtains the lock meanwhile.
// dial gets the Sentinel's address and must return a node for the master
// named [SentinelMaster] through it, such as a URL with sentinel_master.
//
// The old master is kept from answering on purpose. A failover of a master
// that is still serving (SENTINEL FAILOVER for maintenance) leaves two
// masters until Sentinel converts the old one, and a client that has not
// yet followed the switch may be granted the lock there: see the failover
// caveat in docs/operations.md.
func TestSentinelFailover(t *testing.T, dial Dial) {
	// The old master becomes a replica, which saves what it receives
	// (dump.rdb) in its working directory: keep it out of the package's.
	master := redistest.StartServer(t, redistest.WithArgs("--dir", t.TempDir()))
	// Two replicas: the failover promotes one and points the other at it
	// at once, so the new master has a replica to acknowledge extensions
	// while the old master waits to be converted (Sentinel finds it in its
	// next INFO, up to ten seconds later).
	// No delay before a full resynchronisation, should the other replica
	// need one from the promoted one.
	replica := redistest.StartReplica(t, master, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	other := redistest.StartReplica(t, master, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	sentinel := redistest.StartSentinel(t, master, 2)
	n, rn := dial(t, sentinel.Addr()), dial(t, sentinel.Addr())
	defer n.Close()
	defer rn.Close()
	// The node timeout and the acknowledgement's are stretched to the pace
	// measured through the master and its replicas; the TTL follows.
	pace := redistest.MeasurePace(t, master).Max(redistest.MeasurePace(t, replica)).Max(redistest.MeasurePace(t, other))
	ack := pace.Stretch(time.Second)
	timeout := max(4*time.Second, 3*ack)
	ttl := max(failoverTTL, 3*timeout)
	t.Logf("pace %v: replica ack timeout %v, node timeout %v, TTL %v", pace, ack, timeout, ttl)
	opts := []dlm.ManagerOption{dlm.WithKeyPrefix(suitePrefix), dlm.WithTTL(ttl), dlm.WithNodeTimeout(timeout)}
	m, err := dlm.New([]driver.Node{n}, append(opts, dlm.WithReplicaAck(1, ack), dlm.WithHook(hookFunc(func(ctx context.Context, e *dlm.Event) {
		if e.Err != nil {
			t.Logf("event %v %v: %v", e.Kind, e.Op, e.Err)
		}
	})))...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rival, err := dlm.New([]driver.Node{rn}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rival.Close()

	ctx, cancel := context.WithTimeout(context.Background(), max(60*time.Second, 5*ttl))
	defer cancel()
	// holding is true from the grant until fn returns: a rival grant seen
	// while it is still true came while Do held the lock. A grant after fn
	// returned may follow Do's release, before stop is closed.
	var holding atomic.Bool
	var rivalGrants atomic.Int32
	stop, stopped := make(chan struct{}), make(chan struct{})
	inside := make(chan struct{})
	go func() {
		defer close(stopped)
		<-inside
		for {
			if l, err := rival.TryLock(ctx, "failover"); err == nil {
				if holding.Load() {
					rivalGrants.Add(1)
				}
				l.Unlock(ctx)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	err = m.Do(ctx, "failover", func(ctx context.Context) error {
		holding.Store(true)
		defer holding.Store(false)
		// WAIT made sure of one replica; Sentinel promotes the one with
		// the largest replication offset by its last report, which may
		// predate the grant: fail over once both replicas have the key.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			a, _ := replica.Do("PTTL", suitePrefix+"{failover}")
			b, _ := other.Do("PTTL", suitePrefix+"{failover}")
			if a, _ := a.(int64); a > 0 {
				if b, _ := b.(int64); b > 0 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Errorf("the replicas do not have the lock's key 10s after the grant")
				return nil
			}
		}
		close(inside)
		master.Pause()
		// A Sentinel that has only just met the replica answers
		// NOGOODSLAVE until it has checked it: ask again. It may also
		// have started the failover itself (INPROG), finding the master
		// down.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, err := sentinel.Do("SENTINEL", "FAILOVER", redistest.SentinelMaster)
			if err == nil || strings.Contains(err.Error(), "INPROG") {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("SENTINEL FAILOVER: %v", err)
				return nil
			}
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			v, err := sentinel.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", redistest.SentinelMaster)
			if addr, _ := v.([]any); err == nil && len(addr) == 2 && addr[0] == "127.0.0.1" &&
				(addr[1] == portOf(replica) || addr[1] == portOf(other)) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("Sentinel still names %v, %v as the master after 20s; want a replica", v, err)
				return nil
			}
		}
		// Work on for a TTL: an extension must reach the new master.
		select {
		case <-ctx.Done():
			t.Errorf("fn's context ended after the failover: %v", context.Cause(ctx))
		case <-time.After(ttl + time.Second):
		}
		return nil
	})
	close(stop)
	<-stopped
	if err != nil {
		t.Errorf("Do across a failover = %v; want nil", err)
	}
	if g := rivalGrants.Load(); g != 0 {
		t.Errorf("the rival obtained the lock %d time(s) while Do held it across the failover", g)
	}
	if _, err := rival.TryLock(ctx, "failover"); err != nil {
		t.Errorf("rival's TryLock after Do released the lock on the new master: %v", err)
	}
}

func portOf(s *redistest.Server) string {
	_, port, _ := cutLast(s.Addr(), ":")
	return port
}

func cutLast(s, sep string) (before, after string, found bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

type hookFunc func(context.Context, *dlm.Event)

func (f hookFunc) OnEvent(ctx context.Context, e *dlm.Event) { f(ctx, e) }
