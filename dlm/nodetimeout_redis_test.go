package dlm_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestPausedMajorityServedAfter checks, on real redis-servers, that a
// manager with the default, learned node timeouts still obtains locks once
// a majority of its nodes stopped serving writes for a while (CLIENT PAUSE
// WRITE, longer than the cap of the learned timeout, 1 s for the default
// TTL): the timeouts its attempts ran into during the pause, which backed
// the nodes' timeouts off to the cap, neither stall it nor keep it from
// the locks after the pause. It proves what happens, not when: the
// attempt that waits across the pause, and each cycle after it, are
// bounded only to call them stuck.
func TestPausedMajorityServedAfter(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3)
	pace := redistest.MeasurePace(t, srvs[0])
	nodes := make([]driver.Node, len(srvs))
	for i, s := range srvs {
		nodes[i] = respNode(t, s.Addr(), "")
	}
	m, err := dlm.New(nodes, dlm.WithRetry(0, dlm.FixedBackoff(50*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	stuck := pace.Stretch(30 * time.Second)
	cycle := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), stuck)
		defer cancel()
		l, err := m.Lock(ctx, "paused")
		if err != nil {
			t.Fatalf("Lock %s = %v; want the lock", what, err)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Logf("Unlock %s = %v", what, err) // the key expires by itself
		}
	}
	cycle("before the pause")
	pause := 2 * time.Second
	for _, s := range srvs[:2] {
		if _, err := s.Do("CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "WRITE"); err != nil {
			t.Fatal(err)
		}
	}
	paused := time.Now()
	cycle("across the pause of a majority")
	if waited := time.Since(paused); waited < pause/2 {
		t.Logf("the lock came %v after the pause began; CLIENT PAUSE %v may not have held the writes", waited, pause)
	}
	for i := range 20 {
		cycle("after the pause, cycle " + strconv.Itoa(i+1))
	}
}
