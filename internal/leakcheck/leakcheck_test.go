package leakcheck

import (
	"testing"
	"time"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }

func TestCheckFindsLeak(t *testing.T) {
	snap := Take()
	stop := make(chan struct{})
	go func() { <-stop }()
	r := &recorder{TB: t}
	snap.Check(r, 50*time.Millisecond)
	close(stop)
	if !r.failed {
		t.Fatal("Check did not report a goroutine blocked on a channel")
	}
}

func TestCheckWaitsForEndingGoroutines(t *testing.T) {
	snap := Take()
	go func() { time.Sleep(30 * time.Millisecond) }()
	r := &recorder{TB: t}
	snap.Check(r, 2*time.Second)
	if r.failed {
		t.Fatal("Check reported a goroutine that ended within the grace period")
	}
}

func TestScopedFindsOwnLeak(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	snap := Scoped()
	go func() {
		go func() { <-stop }() // started by a goroutine the test started
	}()
	r := &recorder{TB: t}
	snap.Check(r, 50*time.Millisecond)
	if !r.failed {
		t.Fatal("Check did not report a goroutine started by one the test started")
	}
}

func TestScopedIgnoresOthersGoroutines(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	started := make(chan struct{})
	// A goroutine that predates the snapshot starts one after it, as a
	// test running in parallel would.
	later := make(chan struct{})
	go func() {
		<-later
		go func() { <-stop }()
		close(started)
	}()
	all := Take()
	snap := Scoped()
	close(later)
	<-started
	r := &recorder{TB: t}
	snap.Check(r, 50*time.Millisecond)
	if r.failed {
		t.Fatal("Check reported a goroutine that the test's own goroutines did not start")
	}
	// Take, which sees every goroutine, does see it.
	r = &recorder{TB: t}
	all.Check(r, 50*time.Millisecond)
	if !r.failed {
		t.Fatal("Take's Check did not report the other goroutine: the test proves nothing")
	}
}
