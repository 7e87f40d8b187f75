package dlm

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// setterNode is a fakeNode that also takes free keys by SET NX GET
// (driver.Setter).
type setterNode struct {
	*fakeNode
	smu  sync.Mutex
	sets int
	// err, when set, is what SetNXGet fails with, without setting the key.
	err error
	// again answers as the command sent a second time by a client's
	// retry would: with the value it set.
	again bool
}

var _ driver.Setter = (*setterNode)(nil)

func (s *setterNode) SetNXGet(ctx context.Context, key, value, ms string) (any, error) {
	s.smu.Lock()
	s.sets++
	err, again := s.err, s.again
	s.smu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	n, perr := strconv.Atoi(ms)
	if perr != nil || n <= 0 {
		return nil, errors.New("ERR invalid expire time in 'set' command")
	}
	f := s.fakeNode
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.getLocked(key); ok {
		return v, nil
	}
	f.keys[key] = fakeEntry{val: value, exp: time.Now().Add(time.Duration(n) * time.Millisecond)}
	if again {
		return value, nil
	}
	return nil, nil
}

func (s *setterNode) setCount() int {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.sets
}

// setterManager returns n setterNodes and a Manager over them, closed when
// the test ends. Every node has run the acquire script once, for a lock on
// another key; the counts start after it.
func setterManager(t *testing.T, n int, opts ...ManagerOption) ([]*setterNode, []*fakeNode, *Manager) {
	t.Helper()
	ss := make([]*setterNode, n)
	fs := newFakes(n)
	nodes := make([]driver.Node, n)
	for i, f := range fs {
		ss[i] = &setterNode{fakeNode: f}
		nodes[i] = ss[i]
	}
	m, err := New(nodes, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	l, err := m.Lock(ctx, "warm-up")
	if err != nil {
		t.Fatalf("Lock(warm-up): %v", err)
	}
	if err := l.Unlock(ctx); err != nil { // after every node's reply
		t.Fatalf("Unlock(warm-up): %v", err)
	}
	if got, acq := setsAll(ss), countAll(fs, "acquire"); got != 0 || acq != n {
		t.Fatalf("first Lock: SetNXGet sent %d times, acquire script %d; want 0 and %d", got, acq, n)
	}
	for _, f := range fs {
		f.mu.Lock()
		f.calls = map[string]int{}
		f.mu.Unlock()
	}
	return ss, fs, m
}

func setsAll(ss []*setterNode) int {
	n := 0
	for _, s := range ss {
		n += s.setCount()
	}
	return n
}

// TestPlainAcquireOnlyForPlainLocks checks which attempts take the key by
// SET NX instead of the acquire script: a lock over one key without
// fencing, fairness or the restart guard does; the others, whose scripts
// do more than SET, never send the command.
func TestPlainAcquireOnlyForPlainLocks(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, tc := range []struct {
		name      string
		keys      []string
		opts      []Option
		wantSets  int // over 3 nodes
		wantGrant bool
	}{
		{"one key", []string{"k"}, nil, 3, true},
		{"two keys", []string{"k1", "k2"}, nil, 0, true},
		{"fencing", []string{"k"}, []Option{WithFencing()}, 0, false},
		{"fairness", []string{"k"}, []Option{WithFairness(Fairness{})}, 0, true},
		{"restart guard", []string{"k"}, []Option{WithRestartGuard(time.Second)}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss, fs, m := setterManager(t, 3)
			ctx := context.Background()
			l, err := m.TryLockAll(ctx, tc.keys, tc.opts...)
			if (err == nil) != tc.wantGrant {
				t.Fatalf("TryLockAll = %v; want a grant: %v", err, tc.wantGrant)
			}
			if l != nil {
				if err := l.Unlock(ctx); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
			}
			if got := setsAll(ss); got != tc.wantSets {
				t.Errorf("SetNXGet sent %d times; want %d", got, tc.wantSets)
			}
			if got, want := countAll(fs, "acquire"), 3-tc.wantSets; tc.wantGrant && got != want {
				t.Errorf("acquire script sent %d times; want %d", got, want)
			}
		})
	}
}

// TestPlainAcquireNeverTakesHeldKey checks the grant by SET NX against a key
// another holder has on a majority: the attempt is refused, the holder's
// keys are untouched, and the key taken on the free node is released (the
// nodes that refused are not sent the release), so there are never two
// holders.
func TestPlainAcquireNeverTakesHeldKey(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	ss, fs, m := setterManager(t, 3)
	fs[0].set(rkey("k"), "other", time.Minute)
	fs[1].set(rkey("k"), "other", time.Minute)
	_, err := m.TryLock(context.Background(), "k")
	if !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryLock = %v; want ErrNotObtained", err)
	}
	// A release is counted when it is sent, and runs a moment later.
	waitFor(t, "the refused attempt's release", func() bool {
		return countAll(fs, "release") == 1 && holders(fs, rkey("k"))[2] == ""
	})
	if got := setsAll(ss); got != 3 {
		t.Errorf("SetNXGet sent %d times; want 3", got)
	}
	if got := holders(fs, rkey("k")); got[0] != "other" || got[1] != "other" || got[2] != "" {
		t.Errorf("holders after the refused attempt = %q; want [other other \"\"]", got)
	}
}

// TestPlainAcquireNotForContendedKey checks that a key refused by a node
// goes through the acquire script afterwards, which announces its grants to
// waiters, while other keys keep the command.
func TestPlainAcquireNotForContendedKey(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	ss, fs, m := setterManager(t, 3)
	ctx := context.Background()
	for _, f := range fs {
		f.set(rkey("k"), "other", time.Minute)
	}
	if _, err := m.TryLock(ctx, "k"); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryLock = %v; want ErrNotObtained", err)
	}
	// The attempt stops at two refusals; the third request may be under way.
	waitFor(t, "the refused attempt's third request", func() bool { return setsAll(ss) == 3 })
	for _, f := range fs {
		f.set(rkey("k"), "other", 0) // released
	}
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock after the release: %v", err)
	}
	if err := l.Unlock(ctx); err != nil { // after the attempt's last reply
		t.Fatalf("Unlock: %v", err)
	}
	if got, acq := setsAll(ss), countAll(fs, "acquire"); got != 3 || acq != 3 {
		t.Errorf("contended key: SetNXGet sent %d times, acquire script %d; want 3 and 3", got, acq)
	}
	l2, err := m.TryLock(ctx, "other-key")
	if err != nil {
		t.Fatalf("TryLock(other-key): %v", err)
	}
	if err := l2.Unlock(ctx); err != nil { // after the attempt's last reply
		t.Fatalf("Unlock(other-key): %v", err)
	}
	if got := setsAll(ss); got != 6 {
		t.Errorf("uncontended key: SetNXGet sent %d times in all; want 6", got)
	}
}

// TestPlainAcquireFallsBackToScript checks a node whose SET NX GET fails
// with an error reply, as a Redis before 7.0 does: the attempt runs the
// script there and is granted, and the node is sent only the script
// afterwards.
func TestPlainAcquireFallsBackToScript(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	ss, fs, m := setterManager(t, 3)
	for _, s := range ss {
		s.err = errors.New("ERR syntax error")
	}
	ctx := context.Background()
	for i, key := range []string{"a", "b"} {
		l, err := m.Lock(ctx, key)
		if err != nil {
			t.Fatalf("Lock(%s): %v", key, err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock(%s): %v", key, err)
		}
		if got, acq := setsAll(ss), countAll(fs, "acquire"); got != 3 || acq != 3*(i+1) {
			t.Errorf("after Lock(%s): SetNXGet sent %d times, acquire script %d; want 3 and %d", key, got, acq, 3*(i+1))
		}
	}
}

// TestPlainAcquireOwnValue checks that a node answering with the attempt's
// own secret, as a client that sent the command twice would, counts as a
// grant: the first of the two set it within the attempt.
func TestPlainAcquireOwnValue(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	ss, fs, m := setterManager(t, 3)
	for _, s := range ss {
		s.again = true
	}
	ctx := context.Background()
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	waitFor(t, "the lock's secret on every node", func() bool {
		got := holders(fs, rkey("k"))
		return got[0] == l.secret && got[1] == l.secret && got[2] == l.secret
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// TestWriterIntentAtFirstAttempt checks the first attempt of a writer on a
// key that readers hold, which goes by SET NX (the manager has not seen the
// key contended): when the writer will wait (Lock), the attempt records its
// intent on every node that refused it, which keeps new readers out from
// then on; a TryLock records none.
func TestWriterIntentAtFirstAttempt(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, tc := range []struct {
		name       string
		wait       bool
		wantIntent bool
	}{
		{"Lock", true, true},
		{"TryLock", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkLeaks(t)
			var (
				mu      sync.Mutex
				intents = -1 // on the nodes when the first attempt ended
			)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var fs []*fakeNode
			first := hookFunc(func(e *Event) {
				if e.Kind != EventAttempt || e.Key != "k" {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if intents >= 0 {
					return
				}
				intents = 0
				for _, f := range fs {
					if _, _, ok := f.get(script.IntentKey(rkey("k"))); ok {
						intents++
					}
				}
				cancel() // the writer stops waiting
			})
			ss, fakes, m := setterManager(t, 3, WithHook(first), WithRetry(0, FixedBackoff(time.Hour)))
			fs = fakes
			for _, f := range fs {
				f.set(rkey("k"), script.ReadersMark, time.Minute)
			}
			var err error
			if tc.wait {
				_, err = m.Lock(ctx, "k")
			} else {
				_, err = m.TryLock(ctx, "k")
			}
			if !errors.Is(err, ErrNotObtained) && !errors.Is(err, context.Canceled) {
				t.Fatalf("lock behind readers = %v; want ErrNotObtained or the context's end", err)
			}
			if got := setsAll(ss); got < 2 {
				t.Fatalf("SetNXGet sent %d times at the first attempt; want at least 2 (it goes by the command)", got)
			}
			mu.Lock()
			got := intents
			mu.Unlock()
			// The attempt stops at two refusals: those two nodes answered.
			if tc.wantIntent && got < 2 {
				t.Errorf("after the first attempt, %d nodes hold the writer's intent; want at least 2 (a majority)", got)
			}
			if !tc.wantIntent && got != 0 {
				t.Errorf("after TryLock, %d nodes hold a writer's intent; want 0", got)
			}
		})
	}
}

// hookFunc is a Hook made of a function.
type hookFunc func(*Event)

func (f hookFunc) OnEvent(_ context.Context, e *Event) { f(e) }

// ackingSetter is a setterNode that also gives replica acknowledgements:
// every replica acknowledges at once.
type ackingSetter struct{ *setterNode }

func (a ackingSetter) EvalAck(ctx context.Context, s *driver.Script, keys, args []string, replicas int, _ time.Duration) (any, int64, error) {
	v, err := a.Eval(ctx, s, keys, args)
	return v, int64(replicas), err
}

// TestPlainAcquireNotWithReplicaAck checks that a manager that waits for
// replica acknowledgements never takes a key by SET NX, whose write the
// WAIT after the script would not cover: every attempt, the warm-up's
// too, runs the acquire script.
func TestPlainAcquireNotWithReplicaAck(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	ss := make([]*setterNode, 3)
	fs := newFakes(3)
	nodes := make([]driver.Node, 3)
	for i, f := range fs {
		ss[i] = &setterNode{fakeNode: f}
		nodes[i] = ackingSetter{ss[i]}
	}
	m, err := New(nodes, WithReplicaAck(1, 10*time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer m.Close()
	ctx := context.Background()
	for i := range 3 { // the first proves the nodes run the script
		l, err := m.TryLock(ctx, "k")
		if err != nil {
			t.Fatalf("TryLock %d: %v", i, err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock %d: %v", i, err)
		}
	}
	if got := setsAll(ss); got != 0 {
		t.Errorf("SetNXGet sent %d times; want 0 under WithReplicaAck", got)
	}
	if got := countAll(fs, "acquire"); got != 9 {
		t.Errorf("acquire script sent %d times; want 9 (3 attempts on 3 nodes)", got)
	}
}
