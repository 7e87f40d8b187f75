//go:build go1.25

// The batched auto-extension (extender.go, sweep.go) on testing/synctest's
// fake clock, with fake nodes whose faults can hit some locks of a batch
// and not others; synctest_test.go explains the build constraint. The
// batch invariant (see sweep): each lock's extension in
// a batch is Extend's, with its requests sent when the batch was; a node
// whose batch failed — reply lost, late, cut by the node timeout — counts
// as failed for every lock of that batch, and for no other.

package dlm

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// batchRecorder records the keys of each request a node was sent, and
// when.
type batchRecorder struct {
	mu      sync.Mutex
	batches [][]string
	at      []time.Time
}

// on makes f record its requests in r, and answer with the fault and
// delay by gives (healthy, 0 when by is nil).
func (r *batchRecorder) on(f *fakeNode, by func(name string, keys []string) (fault, time.Duration)) {
	f.injectFor(func(name string, keys []string) (fault, time.Duration) {
		if name != "extend" {
			return healthy, 0
		}
		r.mu.Lock()
		r.batches = append(r.batches, slices.Clone(keys))
		r.at = append(r.at, time.Now())
		r.mu.Unlock()
		if by == nil {
			return healthy, 0
		}
		return by(name, keys)
	})
}

// first returns the keys of the first request that carried key.
func (r *batchRecorder) first(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.batches {
		if slices.Contains(b, key) {
			return b
		}
	}
	return nil
}

// times returns when the requests that carry key were sent.
func (r *batchRecorder) times(key string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for i, b := range r.batches {
		if slices.Contains(b, key) {
			out = append(out, r.at[i])
		}
	}
	return out
}

// notAfter fails t if a request carrying key was sent to the node at or
// after limit; start is the test's, for the message.
func (r *batchRecorder) notAfter(t *testing.T, key string, limit, start time.Time) {
	t.Helper()
	for _, at := range r.times(key) {
		if !at.Before(limit) {
			t.Errorf("a request carrying %s sent at start+%v; want none from start+%v on, a guard and a half before its lock's validity ends",
				key, at.Sub(start), limit.Sub(start))
		}
	}
}

// holding returns a fault function that answers fl, d for the extend
// requests that carry key, and leaves the others healthy.
func holding(key string, fl fault, d time.Duration) func(string, []string) (fault, time.Duration) {
	return func(name string, keys []string) (fault, time.Duration) {
		if name == "extend" && slices.Contains(keys, key) {
			return fl, d
		}
		return healthy, 0
	}
}

// lockAll takes each of keys with auto-extension at the same instant, so
// that their extensions fall due together: m's extender draws no jitter.
func lockAll(t *testing.T, m *Manager, keys []string, opts ...Option) map[string]*Lock {
	t.Helper()
	m.extender.lockstep = true
	out := map[string]*Lock{}
	for _, k := range keys {
		l, err := m.TryLock(context.Background(), k, append([]Option{WithAutoExtend(AutoExtend{})}, opts...)...)
		if err != nil {
			t.Fatalf("TryLock(%q) = %v", k, err)
		}
		out[k] = l
	}
	return out
}

// neverOverstated fails t if a lock not reported lost has a validity that
// ends after a quorum of the nodes let its key go: another client could
// then hold it while this one still acts.
func neverOverstated(t *testing.T, fs []*fakeNode, locks map[string]*Lock) {
	t.Helper()
	for k, l := range locks {
		if isClosed(l.Lost()) {
			continue
		}
		if until, exp := l.Until(), quorumExpiry(fs, rkey(k)); until.After(exp) {
			t.Errorf("lock %q: Until() = %v, after a quorum of its keys expire (%v), and Lost is open", k, until.Format("15:04:05.000"), exp.Format("15:04:05.000"))
		}
	}
}

// TestBatchOneCallPerNode checks that the locks whose extensions are due
// together are extended by one script call per node, and each by its own
// vote: every lock's validity moves to the batch's start + TTL − drift.
func TestBatchOneCallPerNode(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m, ss := spyManager(t, fs, WithTTL(time.Second))
		keys := []string{"a", "b", "c", "d"}
		locks := lockAll(t, m, keys)
		for len(sentTimes(ss[:1], "extend")) == 0 {
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		sent := sentTimes(ss[:1], "extend")[0]
		for i, f := range fs {
			if got := f.count("extend"); got != 1 {
				t.Errorf("node %d was sent %d extend requests for the 4 locks due together; want 1", i, got)
			}
		}
		for _, k := range keys {
			if got, want := locks[k].Until(), sent.Add(m.cfg.validity(time.Second)); !got.Equal(want) {
				t.Errorf("lock %q: Until() = sent%+v; want sent%+v, the batch's start + TTL − drift", k, got.Sub(sent), want.Sub(sent))
			}
		}
	})
}

// TestBatchValidityFromStart checks that a lock extended in a batch counts
// its new validity from when the batch was sent, not from when the replies
// came: nodes that applied it at once and answered late hold its key for
// the TTL from the send.
func TestBatchValidityFromStart(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m, ss := spyManager(t, fs, WithTTL(time.Second), WithNodeTimeout(100*time.Millisecond))
		locks := lockAll(t, m, []string{"a", "b"})
		for _, f := range fs {
			f.inject(lateReply, 40*time.Millisecond) // more than the drift allowance, 12ms
		}
		for len(sentTimes(ss[:1], "extend")) == 0 {
			time.Sleep(time.Millisecond)
		}
		sent := sentTimes(ss[:1], "extend")[0]
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		for k, l := range locks {
			if got, want := l.Until(), sent.Add(m.cfg.validity(time.Second)); !got.Equal(want) {
				t.Errorf("lock %q: Until() = sent%+v; want sent%+v", k, got.Sub(sent), want.Sub(sent))
			}
		}
		neverOverstated(t, fs, locks)
	})
}

// TestBatchEntryFailsAlone checks that a lock of a batch that the nodes no
// longer hold under its secret is lost, and only it: the other locks of
// the same script calls are extended.
func TestBatchEntryFailsAlone(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(time.Second))
		locks := lockAll(t, m, []string{"a", "b", "c"})
		first := locks["a"].Until()
		for _, f := range fs[:3] {
			f.set(rkey("b"), "a rival's secret", 10*time.Second) // a quorum lost it
		}
		time.Sleep(700 * time.Millisecond) // past the first extension
		synctest.Wait()
		if got := countAll(fs, "extend"); got != 5 {
			t.Errorf("%d extend requests for the first extensions of 3 locks on 5 nodes; want 5, one batch per node", got)
		}
		select {
		case <-locks["b"].Lost():
		default:
			t.Error("lock b, gone on 3 of 5 nodes: Lost() open after its extension; want it closed")
		}
		if err := locks["b"].Unlock(context.Background()); !errors.Is(err, ErrLockLost) {
			t.Errorf("Unlock(b) = %v; want ErrLockLost", err)
		}
		for _, k := range []string{"a", "c"} {
			if isClosed(locks[k].Lost()) || !locks[k].Until().After(first) {
				t.Errorf("lock %q, in the same batches as b: Lost closed %v, Until moved %v; want it extended", k, isClosed(locks[k].Lost()), locks[k].Until().After(first))
			}
		}
	})
}

// TestBatchRepliesLost checks a batch whose replies are lost on a quorum
// of nodes, which applied it: every lock of that batch fails its
// extension and keeps a validity no later than what the nodes hold; lock
// a, whose batches keep losing their replies, is tried again and reported
// lost a guard before its validity ends, and no request for it is sent
// from a guard and a half before. The locks of the other batches are
// extended all along, and a rival obtains lock a only after its holder's
// validity ended.
func TestBatchRepliesLost(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m := newManager(t, fs, WithTTL(time.Second))
		m.extender.entries = 2 // batches of two locks
		rec := make([]*batchRecorder, len(fs))
		for i, f := range fs {
			rec[i] = &batchRecorder{}
			var fl func(string, []string) (fault, time.Duration)
			if i < 3 {
				fl = holding(rkey("a"), loseReply, 0)
			}
			rec[i].on(f, fl)
		}
		keys := []string{"a", "b", "c", "d"}
		locks := lockAll(t, m, keys)
		start := time.Now()
		until := locks["a"].Until()
		lostA := make(chan time.Duration, 1)
		go func() { lostA <- lostAt(locks["a"], start) }()
		rival := newManager(t, fs, WithTTL(time.Second))
		var rivalAt time.Time
		for time.Since(start) < 3*time.Second {
			time.Sleep(10 * time.Millisecond)
			synctest.Wait()
			neverOverstated(t, fs, locks)
			if rivalAt.IsZero() {
				if r, err := rival.TryLock(context.Background(), "a"); err == nil {
					rivalAt = time.Now()
					if !isClosed(locks["a"].Lost()) || locks["a"].Until().After(rivalAt) {
						t.Errorf("a rival obtained lock a at start+%v while its holder's Until is start+%v, Lost closed %v",
							rivalAt.Sub(start), locks["a"].Until().Sub(start), isClosed(locks["a"].Lost()))
					}
					defer r.Unlock(context.Background())
				}
			}
		}
		failing := rec[0].first(rkey("a"))
		if len(failing) != 2 {
			t.Fatalf("lock a was first batched with %q; want one other lock", failing)
		}
		guard := m.cfg.lossGuard()
		if got, want := <-lostA, until.Sub(start)-guard; got != want {
			t.Errorf("lock a, whose batches' replies are lost: Lost() closed at start+%v; want start+%v, a guard before Until", got, want)
		}
		for _, k := range keys {
			if !slices.Contains(failing, rkey(k)) && isClosed(locks[k].Lost()) {
				t.Errorf("lock %q, in no batch with a, was lost", k)
			}
		}
		for i, f := range fs[:3] {
			if _, exp, ok := f.get(rkey("a")); ok && !exp.After(until) {
				t.Errorf("node %d: key a expires at start+%v; want it extended there (the replies were lost, not the writes)", i, exp.Sub(start))
			}
		}
		if rivalAt.IsZero() {
			t.Error("no rival obtained lock a once its holder lost it")
		}
		if n := len(rec[0].times(rkey("a"))); n < 3 {
			t.Errorf("%d requests carried lock a; want its first extension and retries", n)
		}
		rec[0].notAfter(t, rkey("a"), until.Add(-guard*3/2), start)
	})
}

// TestBatchShortExtensionLost checks the failure rule in a batch: an
// extension to a shorter TTL (the last before MaxHold) whose replies are
// lost on a quorum that applied it brings the validity down to its start +
// TTL − drift, not leaving the holder the old, longer one while the keys
// expire, and a rival obtains the lock only once that validity ended.
func TestBatchShortExtensionLost(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m, ss := spyManager(t, fs, WithTTL(time.Second))
		for _, f := range fs[:3] {
			f.injectFor(holding(rkey("a"), loseReply, 0))
		}
		start := time.Now()
		locks := lockAll(t, m, []string{"a", "b"}, WithAutoExtend(AutoExtend{MaxHold: 700 * time.Millisecond}))
		old := locks["a"].Until()
		for len(sentTimes(ss[:1], "extend")) == 0 {
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		sent := sentTimes(ss[:1], "extend")[0]
		short := start.Add(700 * time.Millisecond).Sub(sent).Truncate(time.Millisecond)
		bound := sent.Add(m.cfg.validity(short))
		if got := locks["a"].Until(); got.After(bound) || !bound.Before(old) {
			t.Errorf("after the failed extension to %v sent at start+%v: Until() = start+%v; want at most start+%v (the old one was start+%v)",
				short, sent.Sub(start), got.Sub(start), bound.Sub(start), old.Sub(start))
		}
		neverOverstated(t, fs, locks)
		rival := newManager(t, fs, WithTTL(time.Second))
		for {
			r, err := rival.TryLock(context.Background(), "a")
			if err == nil {
				if now := time.Now(); !isClosed(locks["a"].Lost()) || locks["a"].Until().After(now) {
					t.Errorf("a rival obtained lock a at start+%v; its holder's Until is start+%v, Lost closed %v",
						now.Sub(start), locks["a"].Until().Sub(start), isClosed(locks["a"].Lost()))
				}
				r.Unlock(context.Background())
				break
			}
			if time.Since(start) > 5*time.Second {
				t.Fatal("no rival obtained lock a within 5s")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// TestBatchLateReplies checks a batch whose replies come late: from a
// minority of nodes, after the node timeout, which cuts them — the locks
// are extended by the others, from the batch's start; from a quorum, for
// the batch of one lock — that lock's extension fails when the node
// timeout cuts the batch, and its validity stays within what the nodes
// hold, which applied it.
func TestBatchLateReplies(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		// A node timeout above half the time the first extension has
		// before its loss guard: the batch waits for the nodes that long.
		const timeout = 200 * time.Millisecond
		hook := &recordingHook{}
		m, ss := spyManager(t, fs, WithTTL(time.Second), WithNodeTimeout(timeout), WithHook(hook))
		m.extender.entries = 1 // a batch per lock
		for i, f := range fs {
			switch {
			case i < 2: // late for every lock
				f.inject(lateReply, 2*timeout)
			case i < 3: // and this one late for a alone: a quorum
				f.injectFor(holding(rkey("a"), lateReply, 2*timeout))
			}
		}
		locks := lockAll(t, m, []string{"a", "b"})
		first := locks["a"].Until()
		for len(sentTimes(ss[:1], "extend")) < 2 {
			time.Sleep(time.Millisecond)
		}
		sent := sentTimes(ss[:1], "extend")[0]
		time.Sleep(2 * timeout)
		synctest.Wait()
		if got, want := locks["b"].Until(), sent.Add(m.cfg.validity(time.Second)); !got.Equal(want) {
			t.Errorf("lock b, late on 2 of 5 nodes: Until() = sent%+v; want sent%+v, extended by the other 3 from the batch's start", got.Sub(sent), want.Sub(sent))
		}
		if got := locks["a"].Until(); !got.Equal(first) {
			t.Errorf("lock a, late on 3 of 5 nodes: Until() moved by %v; want it unchanged", got.Sub(first))
		}
		var failed *Event
		for _, e := range hook.find(EventExtendFailed) {
			if e.Key == "a" {
				failed = &e
				break
			}
		}
		switch {
		case failed == nil:
			t.Error("no extend_failed event for lock a")
		case failed.Duration != timeout || !failed.Start.Equal(sent) || failed.Failed != 3:
			t.Errorf("lock a's failed extension: started sent%+v, took %v, %d failed; want started at the batch's start, settled at the node timeout %v, 3 failed",
				failed.Start.Sub(sent), failed.Duration, failed.Failed, timeout)
		}
		neverOverstated(t, fs, locks)
		for i, f := range fs[:3] {
			if _, exp, ok := f.get(rkey("a")); !ok || !exp.After(first) {
				t.Errorf("node %d: key a not extended (expires %v after its first validity); want the late node to have applied it", i, exp.Sub(first))
			}
		}
	})
}

// TestBatchCutByNodeTimeout checks a batch that a quorum of nodes never
// answers: the node timeout cuts it (its deadline, as long as half the
// time its lock has left to send an extension is shorter), every lock of
// it fails its extension then and is tried again, none after a guard and a
// half before its validity ends, and each is reported lost a guard before;
// the locks of the other batches are extended all along.
func TestBatchCutByNodeTimeout(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		hook := &recordingHook{}
		// The first extension starts at 573ms, 341ms before the last
		// moment an extension may be sent: half of that is less than the
		// node timeout, which cuts the batch then.
		const timeout = 200 * time.Millisecond
		m := newManager(t, fs, WithTTL(time.Second), WithNodeTimeout(timeout), WithHook(hook))
		m.extender.entries = 1
		rec := &batchRecorder{}
		rec.on(fs[0], holding(rkey("a"), hang, 0))
		for _, f := range fs[1:3] {
			f.injectFor(holding(rkey("a"), hang, 0))
		}
		start := time.Now()
		locks := lockAll(t, m, []string{"a", "b"})
		until := locks["a"].Until()
		guard := m.cfg.lossGuard()
		if got, want := lostAt(locks["a"], start), until.Sub(start)-guard; got != want {
			t.Errorf("lock a, whose batches hang on 3 of 5 nodes: Lost() closed at start+%v; want start+%v", got, want)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		sent := rec.times(rkey("a"))
		if len(sent) < 2 {
			t.Fatalf("%d requests carried lock a; want its first extension and a retry", len(sent))
		}
		rec.notAfter(t, rkey("a"), until.Add(-guard*3/2), start)
		failed := 0
		for _, e := range hook.find(EventExtendFailed) {
			if e.Key != "a" {
				continue
			}
			// Cut after half the time left to send an extension, but
			// not before the node timeout, nor after that time: none is
			// in flight when the loss is reported.
			left := until.Add(-guard * 3 / 2).Sub(e.Start)
			cut := min(left, max(timeout, left/2))
			if failed++; failed == 1 && cut != timeout {
				t.Fatalf("the first batch's cut comes after %v; the test wants it at the node timeout %v", cut, timeout)
			}
			if e.Duration != cut || e.Failed != 3 || !slices.ContainsFunc(sent, e.Start.Equal) {
				t.Errorf("lock a's failed extension started at start+%v, took %v, %d failed; want started with a batch, cut after %v, 3 failed",
					e.Start.Sub(start), e.Duration, e.Failed, cut)
			}
		}
		if failed < 2 {
			t.Errorf("%d failed extensions of lock a; want its first and retries", failed)
		}
		if isClosed(locks["b"].Lost()) || !locks["b"].Until().After(until) {
			t.Errorf("lock b, whose batches the nodes answer: Lost closed %v, Until start+%v; want it extended", isClosed(locks["b"].Lost()), locks["b"].Until().Sub(start))
		}
		neverOverstated(t, fs, locks)
	})
}

// TestUnlockAsRoundLetsGo checks an Unlock that comes just as a round has
// let go of the lock, before the round queues it again: it neither waits
// for the round, which is done, nor lets the lock be queued again.
func TestUnlockAsRoundLetsGo(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(3)
		m := newManager(t, fs, WithTTL(time.Second))
		unlocked := make(chan error, 1)
		var once sync.Once
		m.extender.released = func(l *Lock) {
			once.Do(func() {
				go func() { unlocked <- l.Unlock(context.Background()) }()
				select {
				case err := <-unlocked:
					unlocked <- err
				case <-time.After(5 * time.Second):
				}
			})
		}
		if _, err := m.TryLock(context.Background(), "k", WithAutoExtend(AutoExtend{})); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // past the first extension
		select {
		case err := <-unlocked:
			if err != nil {
				t.Errorf("Unlock() = %v; want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Unlock, called as the round let go of the lock, still blocked 10s later")
		}
		sent := countAll(fs, "extend")
		time.Sleep(10 * time.Second)
		if got := countAll(fs, "extend"); got != sent {
			t.Errorf("%d extend requests after Unlock returned; want 0", got-sent)
		}
	})
}

// concurrency counts the extend requests a node is running at once, and
// the most it ran.
type concurrency struct {
	mu        sync.Mutex
	now, most int
}

func (c *concurrency) spy(f *fakeNode, fl fault, d time.Duration) {
	f.injectFor(func(name string, _ []string) (fault, time.Duration) {
		if name != "extend" {
			return healthy, 0
		}
		c.mu.Lock()
		c.now++
		c.most = max(c.most, c.now)
		c.mu.Unlock()
		return fl, d
	})
}

// done records that one of the node's requests returned.
func (c *concurrency) done(name string) {
	if name != "extend" {
		return
	}
	c.mu.Lock()
	c.now--
	c.mu.Unlock()
}

// TestBatchesInFlightBounded checks the bound on the batches in flight to
// each node: with one a node, the batches of a round go one after the other
// to each node, each lock's validity counted from when its batch first
// left, and a node that never answers holds up no other: its batches wait
// in its own queue.
func TestBatchesInFlightBounded(t *testing.T) {
	t.Parallel()
	inBubble(t, func(t *testing.T) {
		fs := newFakes(5)
		m, ss := spyManager(t, fs, WithTTL(time.Second))
		m.extender.entries = 1
		for _, n := range m.nodes {
			n.sender.per = 1
		}
		const slow = 10 * time.Millisecond
		cs := make([]*concurrency, len(fs))
		for i, f := range fs {
			cs[i] = &concurrency{}
			fl, d := healthy, slow
			if i == 4 {
				fl, d = hang, 0
			}
			cs[i].spy(f, fl, d)
			f.onReturn = cs[i].done
		}
		locks := lockAll(t, m, []string{"a", "b", "c"})
		first := locks["a"].Until()
		for len(sentTimes(ss[:1], "extend")) == 0 {
			time.Sleep(time.Millisecond)
		}
		sent := sentTimes(ss[:1], "extend")[0]
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		var untils []time.Duration
		for k, l := range locks {
			if isClosed(l.Lost()) || !l.Until().After(first) {
				t.Errorf("lock %q: Lost closed %v, Until moved %v; want it extended by nodes 0 to 3", k, isClosed(l.Lost()), l.Until().After(first))
			}
			untils = append(untils, l.Until().Sub(sent))
		}
		slices.Sort(untils)
		v := m.cfg.validity(time.Second)
		if want := []time.Duration{v, v + slow, v + 2*slow}; !slices.Equal(untils, want) {
			t.Errorf("the locks' Until = sent+%v; want sent+%v: one batch after the other, each counted from when it left", untils, want)
		}
		for i, c := range cs {
			if c.most > 1 {
				t.Errorf("node %d ran %d extend requests at once; want at most 1", i, c.most)
			}
		}
		if got := ss[4].times("extend"); len(got) != 1 {
			t.Errorf("node 4, which hangs, was sent %d extend requests; want 1, the others waiting for its one slot", len(got))
		}
	})
}
