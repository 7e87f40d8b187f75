package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// TestSemaphoreQuorum checks the derived quorum against the figures
// and, for small clusters, against a count of how many holders fit: with q
// nodes per permit and limit permits per node, floor(nodes·limit/q)
// holders can be placed (round robin), so q is safe exactly when that is at
// most limit, and the derived q is the least safe one.
func TestSemaphoreQuorum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ nodes, limit, want int }{
		{5, 1, 3}, {5, 2, 4}, {5, 3, 4}, {5, 4, 5}, {5, 10, 5}, {1, 1, 1}, {1, 7, 1},
		{3, 1, 2}, {3, 2, 3}, {2, 1, 2}, {7, 2, 5}, {7, 3, 6}, {0, 1, 0}, {5, 0, 0},
	} {
		if got := dlm.SemaphoreQuorum(tc.nodes, tc.limit); got != tc.want {
			t.Errorf("SemaphoreQuorum(%d, %d) = %d; want %d", tc.nodes, tc.limit, got, tc.want)
		}
	}
	fit := func(n, limit, q int) int { return n * limit / q } // holders placed round robin
	for n := 1; n <= 9; n++ {
		for limit := 1; limit <= 12; limit++ {
			q := dlm.SemaphoreQuorum(n, limit)
			if q > n || fit(n, limit, q) > limit {
				t.Errorf("SemaphoreQuorum(%d, %d) = %d: %d holders fit; want at most %d", n, limit, q, fit(n, limit, q), limit)
			}
			if q > 1 && fit(n, limit, q-1) <= limit {
				t.Errorf("SemaphoreQuorum(%d, %d) = %d: %d would be safe too; want the least", n, limit, q, q-1)
			}
		}
	}
}

// TestSemaphoreRefusesUnsafe checks that a limit or quorum that cannot keep
// the limit is refused before any round trip, with the reason.
func TestSemaphoreRefusesUnsafe(t *testing.T) {
	t.Parallel()
	nodes := make([]driver.Node, 5)
	for i := range nodes {
		nodes[i] = deadNode(fmt.Sprintf("dead-%d", i))
	}
	m := rwManager(t, nodes)
	for _, tc := range []struct {
		name  string
		limit int
		opts  []dlm.SemaphoreOption
	}{
		{"limit 0", 0, nil},
		{"limit -1", -1, nil},
		{"limit too large", dlm.MaxPermits + 1, nil},
		{"majority for 2 permits", 2, []dlm.SemaphoreOption{dlm.WithPermitQuorum(3)}},
		{"quorum 4 for 4 permits", 4, []dlm.SemaphoreOption{dlm.WithPermitQuorum(4)}},
		{"quorum above the nodes", 1, []dlm.SemaphoreOption{dlm.WithPermitQuorum(6)}},
		{"negative quorum", 1, []dlm.SemaphoreOption{dlm.WithPermitQuorum(-1)}},
	} {
		_, err := m.Semaphore("jobs", tc.limit, tc.opts...)
		if !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("%s: Semaphore = %v; want ErrInvalid", tc.name, err)
		}
	}
	if _, err := m.Semaphore("", 1); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("Semaphore with an empty name = %v; want ErrInvalid", err)
	}
	s, err := m.Semaphore("jobs", 2, dlm.WithPermitQuorum(5))
	if err != nil || s.Quorum() != 5 || s.Limit() != 2 {
		t.Fatalf("Semaphore(limit 2, quorum 5) = %v, %v; want quorum 5", s, err)
	}
}

// deadNode fails every request as a refused connection would.
type deadNode string

func (d deadNode) Eval(context.Context, *driver.Script, []string, []string) (any, error) {
	return nil, fmt.Errorf("dial tcp %s: connect: connection refused", string(d))
}
func (d deadNode) Addr() string { return string(d) }
func (d deadNode) Close() error { return nil }

// TestSemaphoreLimit checks that at most limit permits are granted, that a
// permit given back lets a waiter in at once, and that a crashed holder's
// permit frees itself at its TTL.
func TestSemaphoreLimit(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	ctx := context.Background()
	nt := pacedNodeTimeout(t, srvs[0], 200*time.Millisecond)
	m := rwManager(t, nodes, dlm.WithRetry(0, dlm.FixedBackoff(time.Minute)), dlm.WithNodeTimeout(nt))
	s, err := m.Semaphore("jobs", 2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ttl := max(500*time.Millisecond, 5*nt/2) // well above the node timeout
	crashed := time.Now()
	if _, err := s.TryAcquire(ctx, dlm.WithTTL(ttl)); err != nil { // never given back
		t.Fatal(err)
	}
	granted := time.Now() // the nodes' leases end by granted+ttl
	_, err = s.TryAcquire(ctx)
	wantErr(t, "TryAcquire of a third permit of 2", err, dlm.ErrNotObtained)
	got := make(chan error, 1)
	go func() {
		p, err := s.Acquire(ctx)
		if err == nil {
			err = p.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	released := time.Now()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Acquire of a waiter = %v", err)
	}
	// Its retry comes half a minute after its first attempt at the
	// earliest: a permit before then was the release's.
	if d := time.Since(released); d >= time.Minute/2 {
		t.Errorf("the waiter got the permit %v after it was given back; want it woken by the release (backoff is a minute)", d)
	}
	b, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.TryAcquire(ctx)
	if time.Since(crashed) < ttl-ttl/5 {
		wantErr(t, "TryAcquire while the crashed holder's permit lasts", err, dlm.ErrNotObtained)
	}
	time.Sleep(time.Until(granted.Add(ttl + 20*time.Millisecond)))
	c, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire after the crashed holder's TTL = %v; want its permit freed", err)
	}
	for _, p := range []*dlm.Lock{b, c} {
		if !p.Shared() {
			t.Error("a permit: Shared() = false")
		}
		if err := p.Unlock(ctx); err != nil {
			t.Error(err)
		}
	}
}

// TestSemaphoreBoundary drives limit+1 holders at the quorum's boundary on
// five real nodes. Each of the first holders reaches only its own q nodes
// (the others are cut off, as a partition would), placed round robin so
// that the permits crowd as few nodes as possible. With the derived quorum
// q the holder after them is refused on a full cluster; with q-1 the same
// placement lets limit+1 holders in, which is why q-1 is refused.
func TestSemaphoreBoundary(t *testing.T) {
	t.Parallel()
	_, nodes := startNodes(t, 5)
	ctx := context.Background()
	for limit := 1; limit <= 4; limit++ {
		q := dlm.SemaphoreQuorum(len(nodes), limit)
		for _, tc := range []struct {
			q    int
			safe bool
		}{{q, true}, {q - 1, false}} {
			name := fmt.Sprintf("sem-%d-%d", limit, tc.q)
			holders := 0
			var held []*dlm.Lock
			// Holders reach q nodes each, round robin, while any node has room.
			for h := 0; h <= limit; h++ {
				part := make([]driver.Node, len(nodes))
				for i := range part {
					part[i] = deadNode(fmt.Sprintf("cut-%d", i))
				}
				for j := range tc.q {
					i := (h*tc.q + j) % len(nodes)
					part[i] = nodes[i]
				}
				pm := rwManager(t, part, dlm.WithNodeTimeout(time.Second))
				s := dlm.UncheckedSemaphore(pm, name, limit, tc.q)
				p, err := s.TryAcquire(ctx)
				if err != nil {
					if h < limit {
						t.Fatalf("limit %d, quorum %d: holder %d: TryAcquire = %v; want the first %d holders in", limit, tc.q, h, err, limit)
					}
					wantErr(t, fmt.Sprintf("limit %d, quorum %d: holder %d: TryAcquire", limit, tc.q, h), err, dlm.ErrNotObtained)
					continue
				}
				holders++
				held = append(held, p)
			}
			if tc.safe && holders > limit {
				t.Errorf("limit %d, derived quorum %d: %d holders at once; want at most %d", limit, tc.q, holders, limit)
			}
			if !tc.safe && holders != limit+1 {
				t.Errorf("limit %d, quorum %d: %d holders; want %d, which shows that a quorum below the bound is unsafe", limit, tc.q, holders, limit+1)
			}
			if tc.safe {
				// Also a holder that reaches every node is refused.
				full := rwManager(t, nodes)
				s, err := full.Semaphore(name, limit)
				if err != nil {
					t.Fatal(err)
				}
				_, err = s.TryAcquire(ctx)
				wantErr(t, fmt.Sprintf("limit %d: TryAcquire on all nodes after %d holders", limit, holders), err, dlm.ErrNotObtained)
			}
			for _, p := range held {
				p.Unlock(ctx)
			}
		}
	}
}

// TestSemaphoreDo checks that Do runs the function under a permit, that
// the permit is given back afterwards, and that no more than the limit run
// at once.
func TestSemaphoreDo(t *testing.T) {
	t.Parallel()
	_, nodes := startNodes(t, 3)
	ctx := context.Background()
	m := rwManager(t, nodes, dlm.WithRetry(0, dlm.FixedBackoff(10*time.Millisecond)))
	s, err := m.Semaphore("jobs", 2)
	if err != nil {
		t.Fatal(err)
	}
	var in, most int64
	mu := make(chan struct{}, 1)
	mu <- struct{}{}
	errs := make(chan error, 6)
	for range 6 {
		go func() {
			errs <- s.Do(ctx, func(ctx context.Context) error {
				if dlm.LockFromContext(ctx) == nil {
					return errors.New("no permit in the context")
				}
				<-mu
				in++
				most = max(most, in)
				mu <- struct{}{}
				time.Sleep(30 * time.Millisecond)
				<-mu
				in--
				mu <- struct{}{}
				return nil
			})
		}()
	}
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if most > 2 {
		t.Errorf("%d functions ran at once under a semaphore of 2", most)
	}
	if most < 2 {
		t.Logf("at most %d ran at once", most)
	}
}

// TestLeaseResume checks that a read lease and a permit handed over with
// Handle are released by the receiver with their own scripts.
func TestLeaseResume(t *testing.T) {
	t.Parallel()
	_, nodes := startNodes(t, 3)
	ctx := context.Background()
	a, b := rwManager(t, nodes), rwManager(t, nodes)
	s, err := a.Semaphore("jobs", 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, take := range map[string]func() (*dlm.Lock, error){
		"read":   func() (*dlm.Lock, error) { return a.TryRLock(ctx, "doc") },
		"permit": func() (*dlm.Lock, error) { return s.TryAcquire(ctx) },
	} {
		l, err := take()
		if err != nil {
			t.Fatal(err)
		}
		h := l.Handle()
		r, err := b.Resume(ctx, h)
		if err != nil {
			t.Fatalf("%s: Resume = %v", name, err)
		}
		if !r.Shared() {
			t.Errorf("%s: the resumed lease: Shared() = false", name)
		}
		if err := r.Extend(ctx, time.Second); err != nil {
			t.Errorf("%s: Extend of the resumed lease = %v", name, err)
		}
		if err := r.Unlock(ctx); err != nil {
			t.Errorf("%s: Unlock of the resumed lease = %v", name, err)
		}
	}
	if _, err := a.TryLock(ctx, "doc"); err != nil {
		t.Errorf("TryLock after the resumed reader left = %v", err)
	}
	if _, err := s.TryAcquire(ctx); err != nil {
		t.Errorf("TryAcquire after the resumed permit was given back = %v", err)
	}
	bad := dlm.Handle{Keys: []string{"jobs"}, Secret: strings.Repeat("A", 22), Until: time.Now().Add(time.Minute), Lease: "permit", Limit: 2, Quorum: 1}
	if _, err := b.Resume(ctx, bad); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("Resume of a permit with an unsafe quorum = %v; want ErrInvalid", err)
	}
}

// TestLeasesLeastPrivilege checks that read locks, the writer's intent and
// semaphores need no rule beyond dlmtest.LeastPrivilegeRules, the ACL
// docs/security.md documents.
func TestLeasesLeastPrivilege(t *testing.T) {
	t.Parallel()
	line := "user locker on >pw-locker " + strings.Join(dlmtest.LeastPrivilegeRules(dlm.DefaultKeyPrefix), " ")
	nodes := make([]driver.Node, 3)
	for i := range nodes {
		s := redistest.StartServer(t, redistest.WithACLFile(t, line))
		cfg, err := driver.ParseURL("redis://locker:pw-locker@" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n := resp.NewNode(cfg)
		t.Cleanup(func() { n.Close() })
		nodes[i] = n
	}
	ctx := context.Background()
	const window = time.Second
	m := rwManager(t, nodes, dlm.WithRetry(0, dlm.FixedBackoff(10*time.Millisecond)), dlm.WithTTL(time.Second), dlm.WithNodeTimeout(500*time.Millisecond), dlm.WithRestartGuard(window))
	// Every node is new to the guard: wait out its window once. The
	// semaphore's permits need all three nodes, the last one started too.
	time.Sleep(guardSettled(window))
	r, err := m.RLock(ctx, "doc")
	if err != nil {
		t.Fatalf("RLock as the least-privilege user = %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = m.Lock(wctx, "doc") // refused by the reader: writes its intent
	cancel()
	wantErr(t, "Lock while a reader holds the key", err, context.DeadlineExceeded)
	if err := r.Extend(ctx, time.Second); err != nil {
		t.Errorf("Extend of a read lock = %v", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Errorf("Unlock of a read lock = %v", err)
	}
	w, err := m.TryLock(ctx, "doc") // clears the intent
	if err != nil {
		t.Fatalf("TryLock after the reader left = %v", err)
	}
	w.Unlock(ctx)
	s, err := m.Semaphore("jobs", 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire as the least-privilege user = %v", err)
	}
	if err := p.Extend(ctx, time.Second); err != nil {
		t.Errorf("Extend of a permit = %v", err)
	}
	if err := p.Unlock(ctx); err != nil {
		t.Errorf("Unlock of a permit = %v", err)
	}
}

// TestLeaseBadInput checks that read locks and semaphores refuse bad input
// with ErrInvalid before any round trip.
func TestLeaseBadInput(t *testing.T) {
	t.Parallel()
	nodes := make([]driver.Node, 3)
	for i := range nodes {
		nodes[i] = deadNode(fmt.Sprintf("dead-%d", i)) // a round trip would fail otherwise
	}
	m := rwManager(t, nodes)
	s, err := m.Semaphore("jobs", 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var nilCtx context.Context
	long := strings.Repeat("k", dlm.MaxKeyLen+1)
	for name, call := range map[string]func() error{
		"RLock nil ctx":         func() error { _, err := m.RLock(nilCtx, "k"); return err },
		"TryRLock empty key":    func() error { _, err := m.TryRLock(ctx, ""); return err },
		"RLock long key":        func() error { _, err := m.RLock(ctx, long); return err },
		"RLock bad TTL":         func() error { _, err := m.RLock(ctx, "k", dlm.WithTTL(0)); return err },
		"RDo nil fn":            func() error { return m.RDo(ctx, "k", nil) },
		"Semaphore long name":   func() error { _, err := m.Semaphore(long, 1); return err },
		"Acquire nil ctx":       func() error { _, err := s.Acquire(nilCtx); return err },
		"TryAcquire bad option": func() error { _, err := s.TryAcquire(ctx, nil); return err },
		"Semaphore.Do nil fn":   func() error { return s.Do(ctx, nil) },
	} {
		if err := call(); !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("%s = %v; want ErrInvalid", name, err)
		}
	}
}
