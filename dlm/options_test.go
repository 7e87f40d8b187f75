package dlm

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestInvalidInput checks that bad options, contexts and keys are rejected
// with ErrInvalid before any round trip, by New, TryLock and Lock alike.
func TestInvalidInput(t *testing.T) {
	t.Parallel()
	var nilCtx context.Context
	ctx := context.Background()
	longKey := strings.Repeat("k", MaxKeyLen+1)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		key  string
		opts []Option
		want string // in the error
	}{
		{"TTL 0", ctx, "k", []Option{WithTTL(0)}, "want at least 1ms"},
		{"TTL -1", ctx, "k", []Option{WithTTL(-1)}, "want at least 1ms"},
		{"TTL 1ns", ctx, "k", []Option{WithTTL(time.Nanosecond)}, "want at least 1ms"},
		// 1ms and 2ms pass the minimum but leave nothing after the drift
		// allowance of ttl×0.01 + 2ms.
		{"TTL 1ms", ctx, "k", []Option{WithTTL(time.Millisecond)}, "leaves no validity"},
		{"TTL 2ms", ctx, "k", []Option{WithTTL(2 * time.Millisecond)}, "leaves no validity"},
		{"TTL 2ms, no drift factor", ctx, "k", []Option{WithTTL(2 * time.Millisecond), WithDriftFactor(0)}, "leaves no validity"},
		// Redis drops the fraction of a millisecond: 2.999ms is 2ms there.
		{"TTL 3ms-1ns, no drift factor", ctx, "k", []Option{WithTTL(3*time.Millisecond - 1), WithDriftFactor(0)}, "leaves no validity"},
		{"drift factor -0.1", ctx, "k", []Option{WithDriftFactor(-0.1)}, "drift factor"},
		{"drift factor 0.5", ctx, "k", []Option{WithDriftFactor(0.5)}, "drift factor"},
		{"drift factor NaN", ctx, "k", []Option{WithDriftFactor(math.NaN())}, "drift factor"},
		{"drift factor +Inf", ctx, "k", []Option{WithDriftFactor(math.Inf(1))}, "drift factor"},
		{"node timeout -1", ctx, "k", []Option{WithNodeTimeout(-1)}, "node timeout"},
		{"retry tries -1", ctx, "k", []Option{WithRetry(-1, nil)}, "retry tries"},
		{"wait timeout -1", ctx, "k", []Option{WithWaitTimeout(-1)}, "wait timeout"},
		{"nil Option", ctx, "k", []Option{WithTTL(time.Second), nil}, "nil Option"},
		{"nil Context", nilCtx, "k", nil, "nil Context"},
		{"empty key", ctx, "", nil, "empty key"},
		{"key too long", ctx, longKey, nil, "at most 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakes(3)
			m := newManager(t, fs)
			l, err := m.TryLock(tc.ctx, tc.key, tc.opts...)
			if l != nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("TryLock(%s) = %v, %v; want ErrInvalid saying %q", tc.name, l, err, tc.want)
			}
			l, err = m.Lock(tc.ctx, tc.key, tc.opts...)
			if l != nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Lock(%s) = %v, %v; want ErrInvalid saying %q", tc.name, l, err, tc.want)
			}
			if tc.ctx != nil && tc.key == "k" {
				m, err := New(asNodes(fs), asManager(tc.opts)...)
				if m != nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("New(%s) = %v, %v; want ErrInvalid saying %q", tc.name, m, err, tc.want)
				}
			}
			if got := countAll(fs, ""); got != 0 {
				t.Errorf("%d script calls; want 0", got)
			}
		})
	}
}

// TestValidInputBoundaries checks the smallest values that are accepted.
func TestValidInputBoundaries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		key  string
		opts []Option
	}{
		{"TTL 3ms", "k", []Option{WithTTL(3 * time.Millisecond)}},
		{"TTL 3ms, no drift factor", "k", []Option{WithTTL(3 * time.Millisecond), WithDriftFactor(0)}},
		{"node timeout just below the TTL", "k", []Option{WithTTL(time.Second), WithNodeTimeout(time.Second - time.Nanosecond)}},
		{"drift factor 0.49", "k", []Option{WithDriftFactor(0.49)}},
		{"node timeout 0 (derived)", "k", []Option{WithNodeTimeout(0)}},
		{"retry tries 0", "k", []Option{WithRetry(0, nil)}},
		{"nil logger", "k", []Option{WithLogger(nil)}},
		{"key of MaxKeyLen", strings.Repeat("k", MaxKeyLen), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := defaultConfig().with(tc.opts); err != nil {
				t.Fatalf("options %s = %v; want valid", tc.name, err)
			}
			if err := checkKey(tc.key); err != nil {
				t.Fatalf("checkKey(%d bytes) = %v; want nil", len(tc.key), err)
			}
		})
	}
}

// TestDerivedNodeTimeout checks the node timeout: a twentieth of the TTL
// within [20ms, 250ms] unless WithNodeTimeout sets it; and the cap of the
// learned timeout whose floor it is: a tenth of the TTL, at most four times
// the floor, never below it, and the fixed timeout of WithNodeTimeout.
func TestDerivedNodeTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl, set, want, limit time.Duration
	}{
		{3 * time.Millisecond, 0, 20 * time.Millisecond, 20 * time.Millisecond},
		{100 * time.Millisecond, 0, 20 * time.Millisecond, 20 * time.Millisecond},
		{400 * time.Millisecond, 0, 20 * time.Millisecond, 40 * time.Millisecond},
		{time.Second, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{2 * time.Second, 0, 100 * time.Millisecond, 200 * time.Millisecond},
		{5 * time.Second, 0, 250 * time.Millisecond, 500 * time.Millisecond},
		{DefaultTTL, 0, 250 * time.Millisecond, time.Second},
		{time.Hour, 0, 250 * time.Millisecond, time.Second},
		{DefaultTTL, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{100 * time.Millisecond, 90 * time.Millisecond, 90 * time.Millisecond, 90 * time.Millisecond},
	} {
		c, err := defaultConfig().with([]Option{WithTTL(tc.ttl), WithNodeTimeout(tc.set)})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.timeout(); got != tc.want {
			t.Errorf("timeout(TTL %v, WithNodeTimeout(%v)) = %v; want %v", tc.ttl, tc.set, got, tc.want)
		}
		if got := c.timeoutCap(); got != tc.limit {
			t.Errorf("timeoutCap(TTL %v, WithNodeTimeout(%v)) = %v; want %v", tc.ttl, tc.set, got, tc.limit)
		}
	}
}

// TestDrift checks the drift allowance: ttl×factor + 2ms.
func TestDrift(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl    time.Duration
		factor float64
		want   time.Duration
	}{
		{DefaultTTL, DefaultDriftFactor, 102 * time.Millisecond},
		{time.Second, DefaultDriftFactor, 12 * time.Millisecond},
		{time.Second, 0, 2 * time.Millisecond},
		{100 * time.Millisecond, 0.1, 12 * time.Millisecond},
	} {
		c := timing{driftFactor: tc.factor}
		if got := c.drift(tc.ttl); got != tc.want {
			t.Errorf("drift(%v, factor %v) = %v; want %v", tc.ttl, tc.factor, got, tc.want)
		}
	}
}

// TestValidityOfTTL checks the validity a TTL proves: the TTL in whole
// milliseconds, as Redis applies it, less the drift allowance of the TTL as
// given.
func TestValidityOfTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl    time.Duration
		factor float64
		want   time.Duration
	}{
		{DefaultTTL, DefaultDriftFactor, 10*time.Second - 102*time.Millisecond},
		{time.Second, DefaultDriftFactor, 988 * time.Millisecond},
		{100 * time.Millisecond, DefaultDriftFactor, 97 * time.Millisecond},
		{100 * time.Millisecond, 0.1, 88 * time.Millisecond},
		{time.Second, 0, 998 * time.Millisecond},
		// The fraction of a millisecond is not on the nodes; the drift is
		// still that of the TTL given.
		{time.Second + 999*time.Microsecond, 0, 998 * time.Millisecond},
		{100*time.Millisecond + 500*time.Microsecond, 0.01, 100*time.Millisecond - 3005*time.Microsecond},
		{3*time.Millisecond - 1, 0, 0},
		{3 * time.Millisecond, 0, time.Millisecond},
		{2 * time.Millisecond, 0.01, -20 * time.Microsecond},
	} {
		c := timing{driftFactor: tc.factor}
		if got := c.validity(tc.ttl); got != tc.want {
			t.Errorf("validity(%v, factor %v) = %v; want %v", tc.ttl, tc.factor, got, tc.want)
		}
	}
}

// TestKeyPrefix checks the Redis key of a lock: the prefix, then the key in
// braces (a Redis Cluster hash tag), from the manager's default or a call's
// own option.
func TestKeyPrefix(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	m := newManager(t, fs, WithKeyPrefix("app:"))
	ctx := context.Background()
	l1, err := m.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := m.TryLock(ctx, "k", WithKeyPrefix("other:"))
	if err != nil {
		t.Fatalf("TryLock under another prefix = %v; want a lock (a different key)", err)
	}
	for _, key := range []string{"app:{k}", "other:{k}"} {
		held := 0
		for _, v := range holders(fs, key) {
			if v != "" {
				held++
			}
		}
		if held < quorum(3) { // TryLock returns once a quorum answered
			t.Errorf("%d nodes hold %q; want at least %d", held, key, quorum(3))
		}
	}
	if got := holders(fs, rkey("k")); got[0]+got[1]+got[2] != "" {
		t.Errorf("nodes hold %q under the default prefix; want nothing", got)
	}
	for _, l := range []*Lock{l1, l2} {
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock(%s) = %v", l.Key(), err)
		}
	}
}

// TestOptionScopes checks the scope of each kind of option: an option of
// the Manager only, or of a semaphore only, is not an Option, so no call
// takes it (given to one, it does not compile), while an Option is good in
// every scope.
func TestOptionScopes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		opt                  any
		call, mgr, semaphore bool
	}{
		{"WithReplicaAck", WithReplicaAck(1, time.Second), false, true, false},
		{"WithPermitQuorum", WithPermitQuorum(3), false, false, true},
		{"WithTTL", WithTTL(time.Second), true, true, true},
		{"WithFairness", WithFairness(Fairness{}), true, true, true},
	} {
		_, call := tc.opt.(Option)
		_, mgr := tc.opt.(ManagerOption)
		_, sem := tc.opt.(SemaphoreOption)
		if call != tc.call || mgr != tc.mgr || sem != tc.semaphore {
			t.Errorf("%s: an Option %v, a ManagerOption %v, a SemaphoreOption %v; want %v, %v, %v",
				tc.name, call, mgr, sem, tc.call, tc.mgr, tc.semaphore)
		}
	}
}

// TestSemaphoreOptionsReachPermits checks that a semaphore's options of
// every scope are the defaults of its permits' calls, and that one of the
// semaphore's only is read when it is made: WithTTL given to Semaphore
// sets its permits' TTL; WithPermitQuorum its quorum.
func TestSemaphoreOptionsReachPermits(t *testing.T) {
	t.Parallel()
	m := newManager(t, newFakes(5))
	s, err := m.Semaphore("sem", 1, WithTTL(3*time.Second), WithPermitQuorum(5))
	if err != nil {
		t.Fatal(err)
	}
	if s.kind.need != 5 {
		t.Errorf("the permit quorum = %d; want 5, as asked", s.kind.need)
	}
	cfg, err := m.cfg.with(s.opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ttl != 3*time.Second {
		t.Errorf("a permit's TTL = %v; want the semaphore's, 3s", cfg.ttl)
	}
}

// TestFairnessDefaultExpiry checks that the default life of a fair
// waiter's place is never below two node timeouts, the bound an Expiry
// given explicitly must meet: with a node timeout of 1.5 s, as
// "redlock run --fair --node-timeout 1.5s" asks, places last 3 s.
func TestFairnessDefaultExpiry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		timeout, want time.Duration
	}{
		{100 * time.Millisecond, DefaultPlaceExpiry},
		{1500 * time.Millisecond, 3 * time.Second},
	} {
		c, err := defaultConfig().with([]Option{WithTTL(time.Minute), WithNodeTimeout(tc.timeout), WithFairness(Fairness{})})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.placeLife(1); got != tc.want {
			t.Errorf("node timeout %v: a fair place lasts %v; want %v", tc.timeout, got, tc.want)
		}
	}
}

// TestDecimal checks that decimal writes numbers as strconv does, and that
// the numbers a lock cycle sends, made again, allocate nothing.
func TestDecimal(t *testing.T) {
	for _, n := range []int64{0, 1, -1, 9, 10, 250, 500, 1024, 2000, 10000, 1 << 40, -1 << 40} {
		for range 2 {
			if got, want := decimal(n), strconv.FormatInt(n, 10); got != want {
				t.Errorf("decimal(%d) = %q; want %q", n, got, want)
			}
		}
	}
	cycle := []int64{10000, 2000, 500, 1024}
	for _, n := range cycle {
		decimal(n)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		for _, n := range cycle {
			decimal(n)
		}
	}); allocs != 0 {
		t.Errorf("decimal of %v again: %v allocations; want 0", cycle, allocs)
	}
}
