//go:build go1.25

// The extender of a process that keeps up, on testing/synctest's fake clock
// (see synctest_test.go for the build constraint and its go:debug line): the
// counterpart of renewal_synctest_test.go's late rounds.

package dlm

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestRenewalOnTimeReported checks that a manager whose process keeps up
// reports every round of its auto-extensions on time: an EventRenewal with
// no error (an [ErrRenewalBehind] marks a late round), the round's locks in
// For and no lag, once per round over several TTLs, with the locks kept.
// It is the claim about when that contrib/otel's TestRenewalLag leans on
// for its on_time samples, which redis-server alone cannot prove on a busy
// machine.
func TestRenewalOnTimeReported(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl = time.Second
		fs := newFakes(5)
		hook := &recordingHook{}
		m := newManager(t, fs, WithTTL(ttl), WithHook(hook))
		ctx := context.Background()
		var locks []*Lock
		for _, key := range []string{"a", "b"} {
			l, err := m.TryLock(ctx, key, WithAutoExtend(AutoExtend{}))
			if err != nil {
				t.Fatal(err)
			}
			locks = append(locks, l)
		}
		time.Sleep(5 * ttl)
		synctest.Wait()
		rounds := hook.find(EventRenewal)
		// Each lock is extended at least once a TTL.
		if len(rounds) < 5 {
			t.Fatalf("%d renewal rounds reported in 5 TTLs; want at least 5; events %v", len(rounds), hook.kinds())
		}
		extended := 0
		for i, e := range rounds {
			if e.Err != nil || e.Duration != 0 || e.For < 1 || e.For > len(locks) {
				t.Errorf("round %d: err %v, lag %v, %d locks; want on time (no error, no lag), 1 or 2 locks", i, e.Err, e.Duration, e.For)
			}
			extended += e.For
		}
		if extended < 5*len(locks) {
			t.Errorf("%d extensions in %d rounds over 5 TTLs; want at least one per lock and TTL", extended, len(rounds))
		}
		for i, l := range locks {
			if isClosed(l.Lost()) {
				t.Errorf("lock %d lost; want it kept", i)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("Unlock: %v", err)
			}
		}
	})
}
