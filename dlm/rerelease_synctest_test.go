//go:build go1.25

// The retries of releases, on testing/synctest's fake clock with fake
// nodes: see synctest_test.go for the build constraint; its go:debug line
// covers this file too.

package dlm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// lateNode is a fake node that applies the acquire requests sent to it
// before landAt only at landAt, while their caller times out: a request
// that sat in the socket of a frozen or overloaded server, or on a
// connection whose bytes were held up, and runs after a release the
// caller sent later on another connection. Every other request runs as
// the fake node runs it.
type lateNode struct {
	*fakeNode
	landAt time.Time
}

func (n *lateNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if scriptName(s) != "acquire" || !time.Now().Before(n.landAt) {
		return n.fakeNode.Eval(ctx, s, keys, args)
	}
	go func() {
		time.Sleep(time.Until(n.landAt))
		n.fakeNode.Eval(context.Background(), s, keys, args)
	}()
	<-ctx.Done()
	return nil, fmt.Errorf("read tcp %s: i/o timeout: %w", n.addr, ctx.Err())
}

// goneBy polls the nodes every 10ms of fake time, for at most limit, and
// returns how long after start key was first absent from every node, or
// -1 if it was still there after limit.
func goneBy(fs []*fakeNode, key string, start time.Time, limit time.Duration) time.Duration {
	for time.Since(start) <= limit {
		if strings.Join(holders(fs, key), "") == "" {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return -1
}

// releaseHangsUntil makes the releases sent to f before t hang, never
// applied, as requests that never reach the server; from t on, f runs them.
func releaseHangsUntil(f *fakeNode, t time.Time) {
	f.injectFor(func(name string, _ []string) (fault, time.Duration) {
		if name == "release" && time.Now().Before(t) {
			return hang, 0
		}
		return healthy, 0
	})
}

// TestUnlockRetriesFailedRelease checks that a release that fails on a node
// (it never reached the server) is sent again in the background, so that
// the key is gone from every node well before its TTL, and that Unlock
// returns as before: nil, since a quorum released it.
func TestUnlockRetriesFailedRelease(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl, outage = 10 * time.Second, 2 * time.Second
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(ttl)) // node timeout 250ms
		ctx := context.Background()
		l, err := m.TryLock(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		start := time.Now()
		releaseHangsUntil(fs[0], start.Add(outage))
		releaseHangsUntil(fs[1], start.Add(outage))
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock() with 2 of 5 releases failing = %v; want nil (a quorum released it)", err)
		}
		// The outage, then at most a capped backoff (a tenth of the TTL)
		// and a node timeout.
		const bound = outage + ttl/10 + 250*time.Millisecond
		checkGone(t, m, fs, start, ttl, bound, "the key was gone from every node", "Unlock")
	})
}

// TestAttemptReleaseResentAfterLateAcquire checks that the release of a
// failed attempt is sent again to a node whose acquire request timed out,
// since the request may run after the first release: the key it sets late
// is gone well before its TTL.
func TestAttemptReleaseResentAfterLateAcquire(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl, late = 10 * time.Second, 2 * time.Second
		fs := newFakes(5)
		setUp(fs, "k", "HHH")
		m, start := withLateNode(t, fs, late, WithTTL(ttl))
		if _, err := m.TryLock(context.Background(), "k"); !errors.Is(err, ErrNotObtained) {
			t.Fatalf("TryLock with 3 of 5 nodes held = %v; want ErrNotObtained", err)
		}
		time.Sleep(late)
		synctest.Wait()
		if v, _, _ := fs[4].get(rkey("k")); v == "" || v == "other" {
			t.Fatalf("node 4 holds %q when the late acquire ran; want the attempt's secret", v)
		}
		const bound = late + ttl/10 + 250*time.Millisecond
		checkGone(t, m, fs[3:], start, ttl, bound, "the attempt's key was gone from nodes 3 and 4", "the attempt")
	})
}

// TestUnlockResentAfterLateAcquire checks the same of Unlock: a lock
// obtained while one node's acquire timed out, and released at once, is
// released again on that node, where the acquire runs after the release.
func TestUnlockResentAfterLateAcquire(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl, late = 10 * time.Second, 2 * time.Second
		fs := newFakes(5)
		m, start := withLateNode(t, fs, late, WithTTL(ttl))
		ctx := context.Background()
		l, err := m.TryLock(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock() = %v; want nil", err)
		}
		time.Sleep(late)
		synctest.Wait()
		const bound = late + ttl/10 + 250*time.Millisecond
		checkGone(t, m, fs, start, ttl, bound, "the key was gone from every node", "TryLock")
	})
}

// TestRetriedReleaseLeavesAnothersKey checks the invariant the retries rest
// on: a release sent again never deletes another holder's key. The first
// release runs on node 0 but its reply is lost, so it is sent again; by
// then another client holds the lock on every node, node 0 included, and
// keeps it: its keys stay, and it extends them on every node.
func TestRetriedReleaseLeavesAnothersKey(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(10*time.Second))
		rival := newManager(t, fs, WithTTL(10*time.Second))
		ctx := context.Background()
		l, err := m.TryLock(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		start := time.Now()
		fs[0].injectFor(func(name string, _ []string) (fault, time.Duration) {
			if name == "release" && time.Now().Before(start.Add(time.Second)) {
				return loseReply, 0
			}
			return healthy, 0
		})
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock() = %v; want nil", err)
		}
		r, err := rival.TryLock(ctx, "k")
		if err != nil {
			t.Fatalf("rival TryLock after Unlock = %v; want the lock", err)
		}
		synctest.Wait() // the rival's requests still due after its quorum land
		secret := fs[1].secret()
		before := fs[0].count("release")
		time.Sleep(3 * time.Second) // the retries end once node 0 answers, after 1s
		if got := fs[0].count("release") - before; got == 0 {
			t.Errorf("node 0 was sent no release after the one whose reply was lost; want it sent again")
		}
		for i, v := range holders(fs, rkey("k")) {
			if v != secret {
				t.Errorf("node %d holds %q after the retried release; want the rival's key", i, v)
			}
		}
		if err := r.Extend(ctx, 10*time.Second); err != nil {
			t.Errorf("rival Extend() = %v; want nil", err)
		}
		if err := r.Unlock(ctx); err != nil {
			t.Errorf("rival Unlock() = %v; want nil", err)
		}
	})
}

// TestReleaseRetriesStopAtTTL checks that a release that keeps failing is
// retried no longer than the key's TTL: past it the key is gone anyway.
func TestReleaseRetriesStopAtTTL(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl = 2 * time.Second
		fs := newFakes(3)
		m := newManager(t, fs, WithTTL(ttl), WithNodeTimeout(100*time.Millisecond))
		ctx := context.Background()
		l, err := m.TryLock(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		start := time.Now()
		fs[0].inject(hang, 0)
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock() = %v; want nil", err)
		}
		time.Sleep(ttl + 100*time.Millisecond) // the last retry's node timeout
		synctest.Wait()
		atTTL := fs[0].count("release")
		if atTTL < 3 {
			t.Errorf("node 0 was sent %d releases within the TTL; want the first and retries", atTTL)
		}
		time.Sleep(time.Minute)
		if got := fs[0].count("release"); got != atTTL {
			t.Errorf("node 0 was sent %d releases more after the TTL (%v after Unlock); want none", got-atTTL, time.Since(start))
		}
	})
}

// retrying reports whether any release of m is queued or under way to be
// sent again, or run's goroutine is under way: once it is false after
// synctest.Wait, no goroutine of the retries is left.
func retrying(m *Manager) bool {
	rr := m.rereleases
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.running || rr.flying > 0 || len(rr.queue) > 0
}

// queued returns how many releases of m wait for their next send.
func queuedReleases(m *Manager) int {
	rr := m.rereleases
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return len(rr.queue)
}

// TestSucceededReleaseCostsNothing checks that a release that succeeds on
// every node schedules nothing: no retry, no goroutine, one release
// request per node.
func TestSucceededReleaseCostsNothing(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs)
		ctx := context.Background()
		const locks = 10
		for i := range locks {
			l, err := m.TryLock(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock() #%d = %v", i, err)
			}
		}
		synctest.Wait()
		if got := m.rereleases.scheduled.Load(); got != 0 {
			t.Errorf("%d releases scheduled again after %d Unlocks that succeeded everywhere; want 0", got, locks)
		}
		if retrying(m) {
			t.Errorf("releases retried, or the retries' goroutine running, after Unlocks that succeeded everywhere; want none")
		}
		if got := countAll(fs, "release"); got != locks*len(fs) {
			t.Errorf("%d release requests for %d Unlocks; want %d, one per node", got, locks, locks*len(fs))
		}
	})
}

// TestReleaseRetriesBounded checks that a manager retries at most its
// bound of releases at once: beyond it the release whose key expires
// soonest is dropped, counted and reported, never queued.
func TestReleaseRetriesBounded(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		fs[0].injectFor(func(name string, _ []string) (fault, time.Duration) {
			if name == "release" {
				return hang, 0
			}
			return healthy, 0
		})
		h := &recordingHook{}
		m := newManager(t, fs, WithTTL(10*time.Second), WithHook(h))
		const limit, locks = 2, 5
		m.rereleases.limit = limit
		ctx := context.Background()
		for i := range locks {
			l, err := m.TryLock(ctx, fmt.Sprint("k", i))
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock() #%d = %v; want nil", i, err)
			}
			m.rereleases.mu.Lock()
			n := len(m.rereleases.queue) + m.rereleases.flying
			m.rereleases.mu.Unlock()
			if n > limit {
				t.Errorf("after Unlock #%d, %d releases retried at once; want at most %d", i, n, limit)
			}
		}
		if got, want := m.rereleases.dropped.Load(), uint64(locks-limit); got != want {
			t.Errorf("%d releases dropped; want %d", got, want)
		}
		dropped := 0
		h.mu.Lock()
		for _, e := range h.events {
			if e.Kind == EventReleaseRetry && e.Err != nil && strings.Contains(e.Err.Error(), "dropped") && e.Node == "fake-0" {
				dropped++
			}
		}
		h.mu.Unlock()
		if dropped != locks-limit {
			t.Errorf("%d EventReleaseRetry events of a dropped release on fake-0; want %d", dropped, locks-limit)
		}
	})
}

// TestCloseEndsReleaseRetries checks that Close sends each release still
// to retry once more, waits for it (a node timeout on a node that hangs),
// and ends the retries: no goroutine of theirs is left, and nothing is
// sent after Close.
func TestCloseEndsReleaseRetries(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		fs[0].injectFor(func(name string, _ []string) (fault, time.Duration) {
			if name == "release" {
				return hang, 0
			}
			return healthy, 0
		})
		h := &recordingHook{}
		m, err := New(asNodes(fs), WithTTL(10*time.Second), WithHook(h)) // node timeout 250ms
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		l, err := m.TryLock(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock() = %v; want nil", err)
		}
		time.Sleep(time.Second) // a few retries
		for queuedReleases(m) == 0 {
			time.Sleep(time.Millisecond) // until the retry waits for its next send
		}
		synctest.Wait()
		before := fs[0].count("release")
		if d := elapsed(func() { m.Close() }); d > 250*time.Millisecond {
			t.Errorf("Close() took %v; want at most a node timeout (250ms)", d)
		}
		synctest.Wait()
		if retrying(m) {
			t.Errorf("releases retried, or the retries' goroutine running, after Close; want none")
		}
		if got := fs[0].count("release") - before; got != 1 {
			t.Errorf("Close sent node 0 %d releases; want 1, the last try", got)
		}
		time.Sleep(time.Minute)
		if got := fs[0].count("release") - before; got != 1 {
			t.Errorf("node 0 was sent %d releases after Close; want none past the last try", got-1)
		}
		closed := 0
		h.mu.Lock()
		for _, e := range h.events {
			if e.Kind == EventReleaseRetry && errors.Is(e.Err, ErrClosed) {
				closed++
			}
		}
		h.mu.Unlock()
		if closed != 1 {
			t.Errorf("%d EventReleaseRetry events wrapping ErrClosed; want 1", closed)
		}
	})
}

// TestAutoExtendedUnlockResentAfterLateAcquire checks the same of a lock
// whose auto-extension let go of its acquire's replies still due before
// Unlock: a node whose reply was still due at the grant is released again
// when the release freed nothing there, while its acquire could still run.
func TestAutoExtendedUnlockResentAfterLateAcquire(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		const ttl, late = 3 * time.Second, 2500 * time.Millisecond
		fs := newFakes(5)
		m, start := withLateNode(t, fs, late, WithTTL(ttl), WithNodeTimeout(250*time.Millisecond))
		ctx := context.Background()
		l, err := m.TryLock(ctx, "k", WithAutoExtend(AutoExtend{}))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2200 * time.Millisecond) // past the first extension
		synctest.Wait()
		l.op.Lock()
		let := l.pend == nil
		l.op.Unlock()
		if !let {
			t.Fatalf("the lock still keeps its acquire's replies after its first extension; the test needs it to have let them go")
		}
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock() = %v; want nil", err)
		}
		time.Sleep(late - time.Since(start))
		synctest.Wait()
		if v, _, _ := fs[4].get(rkey("k")); v == "" {
			t.Fatalf("node 4 holds nothing when the late acquire ran; want the lock's secret")
		}
		const bound = late + 250*time.Millisecond
		checkGone(t, m, fs, start, ttl+late, bound, "the key was gone from every node", "TryLock")
	})
}

// withLateNode returns a manager over fs, made with opts, whose last node's
// requests run only at late from now (see lateNode), and that moment's start.
// The test's end closes the manager.
func withLateNode(t *testing.T, fs []*fakeNode, late time.Duration, opts ...ManagerOption) (*Manager, time.Time) {
	t.Helper()
	start := time.Now()
	nodes := asNodes(fs)
	nodes[len(nodes)-1] = &lateNode{fakeNode: fs[len(fs)-1], landAt: start.Add(late)}
	m, err := New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, start
}

// checkGone checks that key k is gone from every node of fs within bound of
// start (waiting for it up to limit), and logs when it was and how many
// releases m sent again: what names the key, after names the moment start
// stands for.
func checkGone(t *testing.T, m *Manager, fs []*fakeNode, start time.Time, limit, bound time.Duration, what, after string) {
	t.Helper()
	d := goneBy(fs, rkey("k"), start, limit)
	if d < 0 || d > bound {
		t.Errorf("%s %v after %s (-1: not within %v); want within %v", what, d, after, limit, bound)
	}
	t.Logf("%s %v after %s, %d releases sent again", what, d, after, m.rereleases.resent.Load())
}
