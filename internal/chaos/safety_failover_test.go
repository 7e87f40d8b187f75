package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// sentinelGroup is one node of the lock: a master, a replica that
// replicates it through a proxy (so that the test can keep the replica from
// syncing), and a Sentinel.
type sentinelGroup struct {
	master, replica, sentinel *redistest.Server
	link                      *Proxy // replica → master
}

func startSentinelGroup(t *testing.T) *sentinelGroup {
	t.Helper()
	g := &sentinelGroup{master: redistest.StartServer(t, redistest.WithArgs("--dir", t.TempDir()))}
	var err error
	if g.link, err = NewProxy(g.master.Addr()); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(g.link.Addr(), ":")
	g.replica = redistest.StartServer(t, redistest.WithArgs("--replicaof", host, port, "--dir", t.TempDir()))
	want := "port=" + strconv.Itoa(g.replica.Port()) + ",state=online"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v, err := g.master.Do("INFO", "replication")
		if info, _ := v.(string); err == nil && strings.Contains(info, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not online at %s: %v %v", g.replica.Addr(), g.master.Addr(), v, err)
		}
	}
	g.sentinel = redistest.StartSentinel(t, g.master, 1)
	return g
}

// stop ends the group's processes now, rather than at the end of the test.
func (g *sentinelGroup) stop(t *testing.T) {
	g.sentinel.Kill()
	g.master.Resume()
	g.master.Kill()
	g.replica.Kill()
	_ = g.link.Close()
}

// failOver freezes the master (SIGSTOP: it fails, as a stalled machine)
// and has Sentinel promote the replica; it reports whether Sentinel named
// the replica as the master within 30 seconds. A failover that Sentinel
// did not complete (it can abort one on a loaded machine) makes the trial
// void: it says nothing about the lock.
func (g *sentinelGroup) failOver(t *testing.T) bool {
	t.Helper()
	g.master.Pause()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := g.sentinel.Do("SENTINEL", "FAILOVER", redistest.SentinelMaster)
		if err == nil || strings.Contains(err.Error(), "INPROG") {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("SENTINEL FAILOVER: %v", err)
			return false
		}
	}
	port := strconv.Itoa(g.replica.Port())
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v, err := g.sentinel.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", redistest.SentinelMaster)
		if addr, _ := v.([]any); err == nil && len(addr) == 2 && addr[1] == port {
			return true
		}
		if time.Now().After(deadline) {
			t.Logf("Sentinel names %v, %v as the master 30s after the failover; want the replica", v, err)
			return false
		}
	}
}

// failover is scenario 5, one Sentinel group per trial: A is granted the
// lock on the master while the replica has not synced it (its link to the
// master is cut), or, with ack, only once the replica acknowledged it
// (WithReplicaAck); the master fails and Sentinel promotes the replica; B,
// through the same Sentinel, tries the lock on the new master while A's
// validity runs. If B is granted, it writes, and A writes again.
func failover(t *testing.T, trials int, ack bool) tally {
	var tl tally
	for i := 0; tl.Trials < trials; i++ {
		g := startSentinelGroup(t)
		url := "redis+goredis://" + g.sentinel.Addr() + "?sentinel_master=" + redistest.SentinelMaster
		opts := []dlm.ManagerOption{dlm.WithTTL(failoverLockTTL), dlm.WithNodeTimeout(2 * time.Second)}
		aOpts := opts
		if ack {
			aOpts = append(aOpts, dlm.WithReplicaAck(1, time.Second))
		} else {
			g.link.Drop() // the replica is not synced
		}
		a, err := dlm.Open([]string{url}, aOpts...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := dlm.Open([]string{url}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("failover-%d", i)
		hist, res := NewHistory(), &resource{}
		astart := time.Now()
		la, err := a.TryLock(context.Background(), key)
		if err != nil {
			// WithReplicaAck's WAIT can time out on a loaded machine.
			t.Logf("A's TryLock on the master: %v", err)
			tl.void(t, trials)
			_ = a.Close()
			_ = b.Close()
			g.stop(t)
			continue
		}
		hist.Grant(key, "A", astart, time.Now(), la.Until(), 0)
		res.write(1, 0, 0)
		if v, _ := g.replica.Do("EXISTS", lockKey(key)); v == int64(1) {
			tl.note("replica had A's key at the failover")
		}
		if !g.failOver(t) {
			tl.void(t, trials)
			_ = a.Close()
			_ = b.Close()
			g.stop(t)
			continue
		}
		// B tries until a live node answers it: the new master. A
		// refusal (ErrNotObtained) comes from there, since the old
		// master is frozen.
		var lb *dlm.Lock
		answered := false
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			bstart := time.Now()
			lb, err = b.TryLock(context.Background(), key)
			if err == nil {
				hist.Grant(key, "B", bstart, time.Now(), lb.Until(), 0)
				res.write(2, 0, 0)
				answered = true
				break
			}
			if errors.Is(err, dlm.ErrNotObtained) {
				tl.note("B refused by the new master")
				answered = true
				break
			}
			if time.Now().After(deadline) {
				t.Logf("B's TryLock 30s after the failover: %v", err)
				break
			}
		}
		if !answered || time.Now().After(la.Until()) {
			tl.void(t, trials)
		} else {
			res.write(1, 0, 0)
			tl.add(hist, res)
		}
		if lb != nil {
			_ = lb.Unlock(context.Background())
		}
		_ = a.Close()
		_ = b.Close()
		g.stop(t)
	}
	return tl
}
