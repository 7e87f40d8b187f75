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
