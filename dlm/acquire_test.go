package dlm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// setUp puts each fake node in the state its letter in states names:
//
//	y  free and healthy
//	H  held by another client ("other" secret)
//	R  refusing connections
//	E  answering with an error reply
//	L  running the script but losing the reply
func setUp(fs []*fakeNode, key string, states string) {
	for i, c := range states {
		switch c {
		case 'H':
			fs[i].set(rkey(key), "other", time.Minute)
		case 'R':
			fs[i].inject(refuse, 0)
		case 'E':
			fs[i].inject(errReply, 0)
		case 'L':
			fs[i].inject(loseReply, 0)
		}
	}
}

// TestTryLockVote checks, over five nodes in many mixes of states, that the
// lock is obtained exactly when a quorum grants it, that a failure has the
// right sentinel and reports the vote, and that a failed attempt is released
// on every node (also those that failed or lost the reply), so none keeps
// our secret.
//
// TryLock stops counting once the outcome is known, so the vote may leave
// out nodes that had not answered yet: each count is at most the table's,
// and enough nodes said no or failed to rule out a quorum.
func TestTryLockVote(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, tc := range []struct {
		states                string
		ok                    bool
		sentinel              error // for a failure
		forN, against, failed int
	}{
		{states: "yyyyy", ok: true},
		{states: "Hyyyy", ok: true},
		{states: "HHyyy", ok: true},
		{states: "yyyHH", ok: true},
		{states: "HHHyy", sentinel: ErrNotObtained, forN: 2, against: 3},
		{states: "yHHHy", sentinel: ErrNotObtained, forN: 2, against: 3},
		{states: "HHHHy", sentinel: ErrNotObtained, forN: 1, against: 4},
		{states: "HHHHH", sentinel: ErrNotObtained, against: 5},
		{states: "RRyyy", ok: true},
		{states: "LLyyy", ok: true},
		{states: "HELyy", sentinel: ErrNotObtained, forN: 2, against: 1, failed: 2},
		{states: "HHLLy", sentinel: ErrNotObtained, forN: 1, against: 2, failed: 2},
		{states: "LLLyy", sentinel: ErrUnavailable, forN: 2, failed: 3},
		{states: "RELyy", sentinel: ErrUnavailable, forN: 2, failed: 3},
		{states: "HHRRR", sentinel: ErrUnavailable, against: 2, failed: 3},
		{states: "LLLLL", sentinel: ErrUnavailable, failed: 5},
	} {
		t.Run(tc.states, func(t *testing.T) {
			fs := newFakes(5)
			setUp(fs, "k", tc.states)
			m := newManager(t, fs)
			l, err := m.TryLock(context.Background(), "k")
			if tc.ok {
				if err != nil {
					t.Fatalf("TryLock(%q) = %v; want a lock", "k", err)
				}
				ours := map[string]int{}
				for _, v := range holders(fs, rkey("k")) {
					if v != "" && v != "other" {
						ours[v]++
					}
				}
				if len(ours) != 1 {
					t.Errorf("after TryLock, the nodes hold secrets %v; want one secret", ours)
				}
				for _, got := range ours {
					if got < quorum(5) {
						t.Errorf("after TryLock, %d nodes hold our secret; want at least %d", got, quorum(5))
					}
				}
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("Unlock() = %v; want nil", err)
				}
			} else {
				if l != nil || !errors.Is(err, tc.sentinel) {
					t.Fatalf("TryLock(%q) = %v, %v; want nil, an error wrapping %v", "k", l, err, tc.sentinel)
				}
				for _, other := range []error{ErrNotObtained, ErrUnavailable, ErrLockLost} {
					if other != tc.sentinel && errors.Is(err, other) {
						t.Errorf("TryLock(%q) = %v; it also wraps %v", "k", err, other)
					}
				}
				var qerr *QuorumError
				if !errors.As(err, &qerr) {
					t.Fatalf("TryLock(%q) = %v; want a *QuorumError", "k", err)
				}
				if qerr.For > tc.forN || qerr.Against > tc.against || qerr.Failed > tc.failed || qerr.Against+qerr.Failed <= 5-3 {
					t.Errorf("TryLock(%q) vote = %d for, %d against, %d failed; want at most %d, %d, %d, and over 2 against or failed",
						"k", qerr.For, qerr.Against, qerr.Failed, tc.forN, tc.against, tc.failed)
				}
				if qerr.Op != opLock || qerr.Key != "k" || qerr.Nodes != 5 || qerr.Quorum != 3 || qerr.Expired {
					t.Errorf("TryLock(%q) = %+v; want Op lock, Key k, Nodes 5, Quorum 3, not Expired", "k", qerr)
				}
			}
			// Every node that may hold the attempt is asked to release it
			// (those that had not answered in the background, after they
			// do): all but those that refused, which wrote nothing. After
			// Unlock or the release, no node holds our secret, and others'
			// keys stay.
			mayHold := 5 - strings.Count(tc.states, "H")
			waitFor(t, "release on every node that may hold it", func() bool { return countAll(fs, "release") >= mayHold })
			// A release is counted when it is sent; a node whose reply is
			// lost runs it a moment later.
			waitFor(t, "the releases run", func() bool {
				for i, f := range fs {
					if v, _, _ := f.get(rkey("k")); (v == "other") != (tc.states[i] == 'H') {
						return false
					}
				}
				return true
			})
			for i, f := range fs {
				wantReleases := 1
				if tc.states[i] == 'H' && !tc.ok {
					wantReleases = 0
				}
				if got := f.count("release"); got != wantReleases {
					t.Errorf("node %s (%c) ran release %d times; want %d", f.Addr(), tc.states[i], got, wantReleases)
				}
				v, _, _ := f.get(rkey("k"))
				want := ""
				if tc.states[i] == 'H' {
					want = "other"
				}
				if v != want {
					t.Errorf("node %s holds %q after the attempt; want %q", f.Addr(), v, want)
				}
			}
		})
	}
}

// TestTryLockRefusingNodes checks for N = 1..7 and k refusing nodes that the
// lock is obtained iff N-k >= quorum(N), and otherwise fails with
// ErrUnavailable (not ErrNotObtained) carrying a *NodeError for each failure
// counted, only refusing nodes, in node order, with no secret in the message.
func TestTryLockRefusingNodes(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for n := 1; n <= 7; n++ {
		for k := 0; k <= n; k++ {
			// The refusing nodes are the odd ones first, then the even
			// ones from the end, so they are not simply a prefix.
			var refusing []int
			for i := 1; i < n && len(refusing) < k; i += 2 {
				refusing = append(refusing, i)
			}
			for i := n - 1 - (n-1)%2; len(refusing) < k; i -= 2 {
				refusing = append(refusing, i)
			}
			t.Run(fmt.Sprintf("N=%d/refusing=%v", n, refusing), func(t *testing.T) {
				fs := newFakes(n)
				isRefusing := make([]bool, n)
				for _, i := range refusing {
					fs[i].inject(refuse, 0)
					isRefusing[i] = true
				}
				m := newManager(t, fs)
				l, err := m.TryLock(context.Background(), "k")
				if wantOK := n-k >= quorum(n); wantOK {
					if err != nil {
						t.Fatalf("TryLock(%q) = %v; want a lock (%d of %d nodes up)", "k", err, n-k, n)
					}
					_ = l.Unlock(context.Background())
					return
				}
				if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotObtained) {
					t.Fatalf("TryLock(%q) = %v; want ErrUnavailable and not ErrNotObtained", "k", err)
				}
				var nerr *NodeError
				if !errors.As(err, &nerr) {
					t.Fatalf("TryLock(%q) = %v; want a *NodeError inside", "k", err)
				}
				var qerr *QuorumError
				errors.As(err, &qerr)
				nerrs := nodeErrors(err)
				if len(nerrs) != qerr.Failed || qerr.Failed <= n-quorum(n) {
					t.Fatalf("TryLock(%q) = %v: %d node errors for %d failed; want as many, over %d", "k", err, len(nerrs), qerr.Failed, n-quorum(n))
				}
				if nerrs[0] != nerr || !strings.Contains(nerr.Err.Error(), "connection refused") {
					t.Errorf("errors.As found %v; want the first node error %v, connection refused", nerr, nerrs[0])
				}
				last := -1
				for _, e := range nerrs {
					var i int
					if _, err := fmt.Sscanf(e.Node, "fake-%d", &i); err != nil || !isRefusing[i] || i <= last {
						t.Errorf("node errors for %v; want refusing nodes %v in node order", nerrs, refusing)
						break
					}
					last = i
				}
				var failed int
				fmt.Sscanf(nerrs[0].Node, "fake-%d", &failed)
				if secret := fs[failed].secret(); secret == "" || strings.Contains(err.Error(), secret) {
					t.Errorf("TryLock error %q contains the secret %q", err, secret)
				}
			})
		}
	}
}

// TestSingleNode checks that N=1 is the plain single-instance lock.
func TestSingleNode(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(1)
	m := newManager(t, fs)
	ctx := context.Background()
	l, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock(%q) = %v; want a lock", "k", err)
	}
	if v, _, _ := fs[0].get(rkey("k")); v == "" || v != fs[0].secret() {
		t.Fatalf("node holds %q after TryLock; want the secret", v)
	}
	if _, err := m.TryLock(ctx, "k"); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("second TryLock(%q) = %v; want ErrNotObtained", "k", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v; want nil", err)
	}
	if v, _, ok := fs[0].get(rkey("k")); ok {
		t.Fatalf("node holds %q after Unlock; want no key", v)
	}
	l, err = m.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock(%q) after Unlock = %v; want a lock", "k", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v; want nil", err)
	}
}

// TestTryLockCancelledContext checks that an attempt under a cancelled
// context reports the context's error, not ErrNotObtained, and leaves no key.
func TestTryLockCancelledContext(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	m := newManager(t, fs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := m.TryLock(ctx, "k")
	if l != nil || !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotObtained) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("TryLock(cancelled, %q) = %v, %v; want nil, context.Canceled only", "k", l, err)
	}
	waitFor(t, "release on every node", func() bool { return countAll(fs, "release") == 3 })
}

// TestNoSecretInLogs checks that node failures are logged by address, without
// the secret.
func TestNoSecretInLogs(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	logger, buf := newLogger()
	fs := newFakes(3)
	fs[1].inject(errReply, 0)
	fs[2].inject(refuse, 0)
	m := newManager(t, fs, WithLogger(logger), WithRetry(2, FixedBackoff(0)))
	_, err := m.Lock(context.Background(), "k")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Lock(%q) = %v; want ErrUnavailable", "k", err)
	}
	log := buf.String()
	if !strings.Contains(log, "fake-1") || !strings.Contains(log, "fake-2") {
		t.Errorf("log does not name the failing nodes:\n%s", log)
	}
	// The attempts stop at the two failures, so node 0 may run its request
	// after Lock returned: the secret to look for is the one it received.
	waitFor(t, "node 0's request", func() bool { return fs[0].secret() != "" })
	if secret := fs[0].secret(); strings.Contains(log, secret) || strings.Contains(err.Error(), secret) {
		t.Errorf("log or error contains the secret %q:\n%s\n%v", secret, log, err)
	}
}

// TestMutualExclusion runs 32 goroutines taking and releasing one lock over
// five nodes; an overlap detector must never see two holders at once.
func TestMutualExclusion(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	// Node timeouts long enough that a slow machine under -race never
	// turns a scheduling delay into a node failure.
	m := newManager(t, fs, WithTTL(time.Minute), WithNodeTimeout(30*time.Second))
	var inside, obtained, maxHolders atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				l, err := m.TryLock(context.Background(), "shared")
				if err != nil {
					if !errors.Is(err, ErrNotObtained) {
						t.Errorf("TryLock = %v; want nil or ErrNotObtained", err)
						return
					}
					continue
				}
				h := inside.Add(1)
				for {
					old := maxHolders.Load()
					if h <= old || maxHolders.CompareAndSwap(old, h) {
						break
					}
				}
				obtained.Add(1)
				inside.Add(-1)
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("Unlock = %v; want nil", err)
				}
			}
		}()
	}
	wg.Wait()
	if got := maxHolders.Load(); got != 1 {
		t.Errorf("at most %d holders at once; want 1", got)
	}
	if obtained.Load() == 0 {
		t.Errorf("no TryLock out of %d succeeded", 32*50)
	}
	t.Logf("%d of %d attempts obtained the lock", obtained.Load(), 32*50)
	// Every attempt was unlocked or released (some nodes in the
	// background): soon no node keeps a key.
	waitFor(t, "no node holding the key", func() bool {
		return strings.Join(holders(fs, rkey("shared")), "") == ""
	})
}

// TestCrossSlotIsInvalid checks that nodes refusing keys of several hash
// slots (Redis Clusters the manager did not recognise as such) fail a Lock
// at once with ErrInvalid, rather than being counted as unavailable and
// retried until the context ends; while a quorum remains possible Lock
// keeps trying. The refusal is recognised in every form a node reports it.
func TestCrossSlotIsInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		states string // setUp letters, and X: the node refuses the keys' slots
		stops  bool
	}{
		{"all refuse", "XXXXX", true},
		{"a majority refuses", "XXXyy", true},
		{"a minority refuses, the rest are held", "XXHHH", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakes(5)
			setUp(fs, "k", tc.states)
			for i, c := range tc.states {
				if c == 'X' {
					fs[i].inject(crossSlot, 0)
				}
			}
			m := newManager(t, fs)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := m.LockAll(ctx, []string{"k", "other"})
			if !tc.stops {
				if ctx.Err() == nil || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("LockAll over %s = %v before its context ended; want it to keep trying while a quorum is possible", tc.states, err)
				}
				return
			}
			if ctx.Err() != nil || !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotObtained) {
				t.Fatalf("LockAll over %s = %v after its context ended: %v; want ErrInvalid at once, not ErrNotObtained",
					tc.states, err, ctx.Err() != nil)
			}
			var nerr *NodeError
			if !errors.As(err, &nerr) || !errors.Is(nerr, ErrInvalid) || errors.Is(nerr, ErrPermission) {
				t.Errorf("LockAll = %v; want a *NodeError that is ErrInvalid, not ErrPermission", err)
			}
		})
	}
	for _, msg := range []string{
		"CROSSSLOT Keys in request don't hash to the same slot",
		"ERR Error running script (call to f_0123): @user_script:3: @user_script: 3: Lua script attempted to access a non local key in a cluster node",
		"ERR Script attempted to access a non local key in a cluster node script: f_0123, on @user_script:3.",
		"rueidis: client library panicked: multi key command with different key slots are not allowed",
	} {
		if err := (&NodeError{Node: "n", Err: fmt.Errorf("wrapped: %w", errors.New(msg))}); !errors.Is(err, ErrInvalid) {
			t.Errorf("NodeError(%q) is not ErrInvalid", msg)
		}
	}
	for _, msg := range []string{"MOVED 3300 127.0.0.1:7001", "CLUSTERDOWN The cluster is down", "ERR unknown command 'CROSSSLOTS'"} {
		if err := (&NodeError{Node: "n", Err: errors.New(msg)}); errors.Is(err, ErrInvalid) {
			t.Errorf("NodeError(%q) is ErrInvalid; want only refusals of several slots", msg)
		}
	}
}

// TestPermissionIsNotContention checks that nodes refusing access are told
// apart from a lock held elsewhere, and that Lock stops retrying at once
// when they leave no quorum possible, rather than waiting for its context.
// While a quorum remains possible it keeps trying.
func TestPermissionIsNotContention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		states   string // setUp letters, and P: the node answers NOPERM
		obtained bool
		stops    bool // before the context ends, with ErrPermission
	}{
		{"all refuse", "PPPPP", false, true},
		{"a majority refuses", "PPPyy", false, true},
		{"a minority refuses", "PPyyy", true, false},
		{"a minority refuses, the rest are held", "PPHHH", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakes(5)
			setUp(fs, "k", tc.states)
			for i, c := range tc.states {
				if c == 'P' {
					fs[i].inject(noPerm, 0)
				}
			}
			m := newManager(t, fs)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			l, err := m.Lock(ctx, "k")
			switch {
			case tc.obtained:
				if err != nil {
					t.Fatalf("Lock(%q) over %s = %v; want the lock", "k", tc.states, err)
				}
				l.Unlock(context.Background())
			case tc.stops:
				if ctx.Err() != nil || !errors.Is(err, ErrPermission) || errors.Is(err, ErrNotObtained) {
					t.Fatalf("Lock(%q) over %s = %v after its context ended: %v; want ErrPermission at once, not ErrNotObtained",
						"k", tc.states, err, ctx.Err() != nil)
				}
				var nerr *NodeError
				if !errors.As(err, &nerr) || !errors.Is(nerr, ErrPermission) {
					t.Errorf("Lock(%q) = %v; want a *NodeError that is ErrPermission", "k", err)
				}
			default:
				if ctx.Err() == nil || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Lock(%q) over %s = %v before its context ended; want it to keep trying while a quorum is possible", "k", tc.states, err)
				}
			}
		})
	}
}
